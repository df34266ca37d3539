//! Assignors the application registers in code ([`ConsumerConfigBuilder::assignor`]): Java
//! loads any `ConsumerPartitionAssignor` class named in `partition.assignment.strategy`; here
//! the application hands the builder a factory, and the assignor's name then works in that
//! list like a built-in one.
//!
//! [`ConsumerConfigBuilder::assignor`]: crate::config::ConsumerConfigBuilder::assignor

use std::fmt;
use std::sync::Arc;

use super::ConsumerPartitionAssignor;

type Make = dyn Fn() -> Box<dyn ConsumerPartitionAssignor> + Send + Sync;

/// A custom assignor registered under its name. Each consumer gets a fresh instance from the
/// factory, since an assignor may keep per-member state (the sticky assignors remember the
/// member's last assignment).
#[derive(Clone)]
pub struct RegisteredAssignor {
    name: &'static str,
    make: Arc<Make>,
}

impl RegisteredAssignor {
    /// Registers `make`'s assignor under the name it reports.
    pub fn new<A, F>(make: F) -> Self
    where
        A: ConsumerPartitionAssignor + 'static,
        F: Fn() -> A + Send + Sync + 'static,
    {
        let name = make().name();
        Self {
            name,
            make: Arc::new(move || Box::new(make()) as Box<dyn ConsumerPartitionAssignor>),
        }
    }

    /// The protocol name the assignor sends in JoinGroup.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// A fresh instance.
    pub fn instance(&self) -> Box<dyn ConsumerPartitionAssignor> {
        (self.make)()
    }
}

/// Registrations are the same when their names are: the name is what the group sees.
impl PartialEq for RegisteredAssignor {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for RegisteredAssignor {}

impl fmt::Debug for RegisteredAssignor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RegisteredAssignor")
            .field(&self.name)
            .finish()
    }
}

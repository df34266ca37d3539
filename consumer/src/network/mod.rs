//! Talking to brokers: one task per broker connection, the network client the background task
//! drives, cluster metadata, reconnect backoff, and the errors all of it can produce.

pub mod backoff;
mod client;
mod config;
mod connect_failures;
mod connection;
mod error;
pub mod in_flight;
pub mod metadata;
mod node;
mod observer;
mod read_buffer;
mod rebootstrap;
mod request;
pub mod sasl;
mod secret;
mod security;
mod socket;
pub mod tls;

pub use client::{ConnectedNode, NetworkClient, RequestOptions, Target};
pub use config::NetworkConfig;
pub use error::{CloseReason, NetworkError};
pub use metadata::{Broker, LeaderHint, Metadata, MetadataScope};
pub use node::NodeEvent;
pub use observer::{NetworkObserver, ObserverHandle};
#[cfg_attr(not(feature = "__internal"), allow(unused_imports))] // The testbed's API.
pub use request::{Response, ResponseFuture};
pub use secret::Secret;
pub use security::{SecurityConfig, SecurityProtocol};

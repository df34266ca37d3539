//! Scenarios of the project's own: a race class found or filed here (an issue of this
//! project, possibly with a Jira ancestor), one file each. Like the families they draw their
//! knobs from the seed; unlike them they assert the checker set their race needs rather than
//! [`crate::families::full_checks`].

pub mod committed_after_move;
pub mod seek_reset;
pub mod stall_regain;

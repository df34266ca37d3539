//! Coordinator tests with a fake clock.

//! Assignor property tests.

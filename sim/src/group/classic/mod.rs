//! The classic group protocol (placeholder until its state machine lands).

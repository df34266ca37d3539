//! The KIP-848 consumer group protocol (placeholder until its state machine lands).

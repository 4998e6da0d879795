//! End-to-end tests of the real `retry` binary.

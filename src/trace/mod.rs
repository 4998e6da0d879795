//! Trace context and spans: the W3C Trace Context retry reads and hands on
//! (`context`), the spans of a run as plain data (`span`), and their OTLP
//! encoding (`otlp`). Pure: no I/O, ids from the generator passed in.

pub mod context;
pub mod otlp;
pub mod span;

//! Arrivals over time as a plain-text chart.

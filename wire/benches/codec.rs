//! Placeholder; the codec benchmarks are being written.
fn main() {}

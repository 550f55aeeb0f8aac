//! zoolock conformance: trace reading and replay.

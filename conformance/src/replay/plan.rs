//! A trace decoded and grouped into the steps a replay takes: client
//! frames, groups of server frames fed together, the close.

use zoolock_wire::{OpCode, Xid};

use super::{Location, ReplayError};
use crate::decode::{DecodedFrame, StreamDecoder};
use crate::trace::{Close, Direction, Entry, Frame, Trace};

/// One unit of replay work.
#[derive(Debug)]
pub(super) enum Step {
    /// A client frame (pings excluded).
    Client(Frame, DecodedFrame),
    /// Server frames fed together: same timestamp, consecutive, delivered.
    Server(Vec<(Frame, DecodedFrame)>),
    /// The close event.
    Close(Close),
}

/// Decodes `trace` and groups it into steps; pings, ping replies and dropped
/// server frames are left out.
pub(super) fn plan(trace: &Trace) -> Result<Vec<Step>, ReplayError> {
    let mut decoder = StreamDecoder::new();
    let mut steps: Vec<Step> = Vec::new();
    // Whether the last step may take more server frames.
    let mut open_group = false;
    for entry in &trace.entries {
        match entry {
            Entry::Frame(frame) => {
                let decoded = decoder.decode_frame(&trace.path, frame)?;
                let ping = match &decoded {
                    DecodedFrame::Request(r) => r.header.op == OpCode::PING,
                    DecodedFrame::Server { message, .. } => message.header().xid == Xid::PING,
                    _ => false,
                };
                if ping || (frame.dir == Direction::S2c && frame.dropped) {
                    continue;
                }
                match frame.dir {
                    Direction::C2s => {
                        open_group = false;
                        steps.push(Step::Client(frame.clone(), decoded));
                    }
                    Direction::S2c => {
                        let handshake = matches!(decoded, DecodedFrame::ConnectResponse(_));
                        // A checkWatches reply ends its group: the client
                        // forgets the watch before it reads the next frame.
                        let ends_group =
                            matches!(&decoded, DecodedFrame::Server { reply_to: Some(OpCode::CHECK_WATCHES), .. });
                        let joined = match steps.last_mut() {
                            Some(Step::Server(group))
                                if open_group
                                    && !handshake
                                    && group.first().is_some_and(|(f, _)| f.t_us == frame.t_us) =>
                            {
                                group.push((frame.clone(), decoded.clone()));
                                true
                            }
                            _ => false,
                        };
                        if !joined {
                            steps.push(Step::Server(vec![(frame.clone(), decoded)]));
                        }
                        open_group = !handshake && !ends_group;
                    }
                }
            }
            Entry::Close(close) => {
                open_group = false;
                steps.push(Step::Close(close.clone()));
            }
            Entry::Raw(raw) => {
                return Err(ReplayError::Unsupported {
                    at: Location { file: trace.path.clone(), line: raw.line },
                    reason: String::from("raw (unframed) chunk"),
                });
            }
            Entry::Other { .. } => {}
        }
    }
    Ok(steps)
}

/// In a trace with dropped frames: `t_us` of the last frame forwarded before
/// the first dropped one (0 if none was).
pub(crate) fn blackhole_start(trace: &Trace) -> Option<u64> {
    let mut last = 0;
    for frame in trace.frames() {
        if frame.dropped {
            return Some(last);
        }
        last = frame.t_us;
    }
    None
}

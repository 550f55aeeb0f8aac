//! What a session writes: numbering requests, encoding them into the
//! send buffer with their purpose kept for the reply, and the auth and
//! setWatches packets it sends on its own.

use super::*;

impl Session {
    pub(super) fn alloc_xid(&mut self) -> i32 {
        let xid = self.next_xid;
        self.next_xid = if self.next_xid >= i32::MAX - 1 { 1 } else { self.next_xid + 1 };
        xid
    }

    pub(super) fn send(&mut self, now: Instant, request: Request, purpose: Purpose) {
        // The xid is only used up once the frame is known to fit.
        let xid = self.next_xid;
        let op = request.op_code();
        let frame = RequestFrame { header: RequestHeader { xid: Xid(xid), op }, request };
        match encode_frame(&frame, self.config.max_frame_len, &mut self.outbound) {
            Ok(()) => {
                self.alloc_xid();
                self.in_flight.push_back(InFlight { xid, op, purpose, sent: now });
                self.last_send = now;
                self.quorum.touched(now, self.timeout());
            }
            Err(zoolock_wire::EncodeError::FrameTooLarge { len, max }) => {
                if let Purpose::User { id, .. } = purpose {
                    self.events.push_back(SessionEvent::Reply { id, result: Err(RequestError::TooLarge { len, max }) });
                }
            }
            Err(_) => {}
        }
    }

    pub(super) fn send_auth(&mut self, now: Instant, scheme: &str, auth: Bytes) {
        let packet = RequestFrame::new(
            Xid::AUTH,
            Request::Auth(AuthPacket { auth_type: 0, scheme: String::from(scheme), auth: Some(auth) }),
        );
        if encode_frame(&packet, self.config.max_frame_len, &mut self.outbound).is_ok() {
            self.last_send = now;
        }
    }

    pub(super) fn send_set_watches(&mut self, now: Instant) {
        let armed = self.watches.armed();
        let root = self.chroot.clone();
        let mut current = SetWatches { relative_zxid: self.last_zxid, ..SetWatches::default() };
        let mut size = 0;
        if self.ensemble_armed() {
            // A server path: the chroot never applies to it.
            current.data_watches.push(String::from(crate::ensemble::CONFIG_PATH));
            size += crate::ensemble::CONFIG_PATH.len();
        }
        let lists = [(0, armed.data), (1, armed.exist), (2, armed.child)];
        for (which, paths) in lists {
            for path in paths {
                let server = to_server_path(root.as_deref(), &path);
                if size + server.len() > SET_WATCHES_CHUNK && size > 0 {
                    let full = core::mem::replace(
                        &mut current,
                        SetWatches { relative_zxid: self.last_zxid, ..SetWatches::default() },
                    );
                    self.send(now, Request::SetWatches(full), Purpose::SetWatches);
                    size = 0;
                }
                size += server.len();
                match which {
                    0 => current.data_watches.push(server),
                    1 => current.exist_watches.push(server),
                    _ => current.child_watches.push(server),
                }
            }
        }
        if size > 0 {
            self.send(now, Request::SetWatches(current), Purpose::SetWatches);
        }
    }
}

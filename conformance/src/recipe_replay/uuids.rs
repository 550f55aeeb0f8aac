//! Curator's protection UUIDs: a recorded client's and zoolock's differ, so
//! frames are compared with the UUIDs masked and a one-to-one map between them.

use std::collections::HashMap;
use std::ops::Range;

/// Curator's protection prefix before the UUID.
const PROTECTION: &[u8] = b"_c_";
/// A UUID in text form.
const UUID_LEN: usize = 36;

/// Byte ranges of the UUIDs in `_c_<uuid>-` prefixes.
pub(super) fn uuid_spans(bytes: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + PROTECTION.len() + UUID_LEN < bytes.len() {
        let start = i + PROTECTION.len();
        let end = start + UUID_LEN;
        let found = bytes.get(i..start) == Some(PROTECTION)
            && bytes.get(start..end).is_some_and(is_uuid)
            && bytes.get(end) == Some(&b'-');
        if found {
            out.push(start..end);
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

pub(super) fn is_uuid(b: &[u8]) -> bool {
    b.len() == UUID_LEN
        && b.iter()
            .enumerate()
            .all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { *c == b'-' } else { c.is_ascii_hexdigit() })
}

/// The one-to-one correspondence between Curator's and zoolock's UUIDs.
#[derive(Debug, Default)]
pub(super) struct UuidMap {
    to_zoolock: HashMap<String, String>,
    to_recorded: HashMap<String, String>,
}

impl UuidMap {
    /// Records that `recorded` is zoolock's `ours`; an error describes a
    /// conflict with what was learned before.
    pub(super) fn learn(&mut self, recorded: &str, ours: &str) -> Result<(), String> {
        match (self.to_zoolock.get(recorded), self.to_recorded.get(ours)) {
            (Some(z), _) if z != ours => Err(format!("recorded UUID {recorded} was zoolock's {z} before, now {ours}")),
            (_, Some(r)) if r != recorded => {
                Err(format!("zoolock's UUID {ours} stood for recorded {r} before, now for {recorded}"))
            }
            _ => {
                self.to_zoolock.insert(recorded.to_owned(), ours.to_owned());
                self.to_recorded.insert(ours.to_owned(), recorded.to_owned());
                Ok(())
            }
        }
    }

    pub(super) fn rewrite(map: &HashMap<String, String>, bytes: &mut [u8]) {
        for span in uuid_spans(bytes) {
            let Some(from) = bytes.get(span.clone()).and_then(|b| std::str::from_utf8(b).ok()) else { continue };
            if let Some(to) = map.get(from) {
                if let Some(dst) = bytes.get_mut(span) {
                    dst.copy_from_slice(to.as_bytes());
                }
            }
        }
    }

    /// Recorded UUIDs replaced by zoolock's (unknown ones are kept).
    pub(super) fn zoolock_bytes(&self, bytes: &mut [u8]) {
        UuidMap::rewrite(&self.to_zoolock, bytes);
    }

    pub(super) fn zoolock_path(&self, path: &str) -> String {
        let mut bytes = path.as_bytes().to_vec();
        self.zoolock_bytes(&mut bytes);
        String::from_utf8(bytes).unwrap_or_else(|_| path.to_owned())
    }

    /// zoolock's UUIDs replaced by the recorded ones.
    pub(super) fn recorded_path(&self, path: &str) -> String {
        let mut bytes = path.as_bytes().to_vec();
        UuidMap::rewrite(&self.to_recorded, &mut bytes);
        String::from_utf8(bytes).unwrap_or_else(|_| path.to_owned())
    }
}

/// Compares request bodies with the UUIDs of protection prefixes left out;
/// returns the (recorded, zoolock) UUID pairs when everything else is equal.
pub(super) fn compare_bodies(want: &[u8], got: &[u8]) -> Option<Vec<(String, String)>> {
    let spans = uuid_spans(want);
    if want.len() != got.len() || spans != uuid_spans(got) {
        return None;
    }
    let mut pairs = Vec::with_capacity(spans.len());
    let mut from = 0;
    for span in &spans {
        if want.get(from..span.start)? != got.get(from..span.start)? {
            return None;
        }
        let w = std::str::from_utf8(want.get(span.clone())?).ok()?;
        let g = std::str::from_utf8(got.get(span.clone())?).ok()?;
        pairs.push((w.to_owned(), g.to_owned()));
        from = span.end;
    }
    (want.get(from..)? == got.get(from..)?).then_some(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const U1: &str = "56e55bc4-230a-4140-b2d2-5f8ba3d28c4b";
    const U2: &str = "7f027929-100a-4b11-96c8-0a8a91fd9da1";

    #[test]
    fn finds_protection_uuids_only() {
        let path = format!("/b/_c_{U1}-lock-0000000001 /b/{U1}-lock- _c_{U2}x _c_{U2}-");
        let spans = uuid_spans(path.as_bytes());
        assert_eq!(spans.len(), 2);
        assert_eq!(&path[spans[0].clone()], U1);
        assert_eq!(&path[spans[1].clone()], U2);
        assert!(uuid_spans(format!("_c_{U1}").as_bytes()).is_empty());
    }

    #[test]
    fn bodies_compare_modulo_uuids() {
        let want = format!("/b/_c_{U1}-lock-");
        let got = format!("/b/_c_{U2}-lock-");
        assert_eq!(compare_bodies(want.as_bytes(), got.as_bytes()), Some(vec![(U1.to_owned(), U2.to_owned())]));
        assert_eq!(compare_bodies(want.as_bytes(), format!("/b/_c_{U2}-lokk-").as_bytes()), None);
        assert_eq!(compare_bodies(want.as_bytes(), format!("/b/_c_{U2}-lock-x").as_bytes()), None);
    }

    #[test]
    fn uuid_map_is_one_to_one() {
        let mut map = UuidMap::default();
        assert!(map.learn(U1, U2).is_ok());
        assert!(map.learn(U1, U2).is_ok());
        assert!(map.learn(U1, U1).is_err());
        assert!(map.learn(U2, U2).is_err());
        assert_eq!(map.zoolock_path(&format!("/b/_c_{U1}-lock-1")), format!("/b/_c_{U2}-lock-1"));
        assert_eq!(map.recorded_path(&format!("/b/_c_{U2}-lock-1")), format!("/b/_c_{U1}-lock-1"));
    }
}

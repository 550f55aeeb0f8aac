//! SASL DIGEST-MD5 (RFC 2831), client side, as ZooKeeper's server speaks it
//! (Java's `DigestMD5Server` behind `DigestLoginModule`): no initial
//! response; the server's challenge, our digest-response, then the server's
//! `rspauth`, which we check. Only `qop=auth` (no integrity or privacy
//! layer), as ZooKeeper uses. MD5 comes from RustCrypto's `md-5`; the
//! rest is the RFC's text format, tested against its example exchange.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use md5::{Digest, Md5};

use super::{SaslError, SaslMechanism};

/// ZooKeeper's SASL service: the Java client's `zookeeper.sasl.client.username`
/// default, and the server name it uses for DIGEST-MD5.
pub(crate) const ZK_PROTOCOL: &str = "zookeeper";
/// The server name (and default realm) of ZooKeeper's DIGEST-MD5.
pub(crate) const ZK_SERVER_NAME: &str = "zk-sasl-md5";

#[derive(Debug)]
enum Step {
    /// Waiting for the challenge.
    Challenge,
    /// Sent the response; waiting for `rspauth` (the expected value).
    Proof(String),
    Done,
}

/// One DIGEST-MD5 exchange. Its `Debug` output hides the password.
pub(crate) struct DigestMd5 {
    user: String,
    password: String,
    digest_uri: String,
    cnonce: String,
    step: Step,
}

impl core::fmt::Debug for DigestMd5 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DigestMd5").field("user", &self.user).field("step", &self.step).finish()
    }
}

/// The value of `key` in a DIGEST-MD5 directive list (quoted or not).
fn directive<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let mut rest = text;
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        let (name, after) = rest.split_once('=')?;
        let (value, next) = match after.strip_prefix('"') {
            // Quoted strings may hold escaped quotes (`\"`).
            Some(quoted) => {
                let mut end = None;
                let mut escaped = false;
                for (i, c) in quoted.char_indices() {
                    match c {
                        '\\' if !escaped => escaped = true,
                        '"' if !escaped => {
                            end = Some(i);
                            break;
                        }
                        _ => escaped = false,
                    }
                }
                let end = end?;
                (quoted.get(..end)?, quoted.get(end + 1..)?)
            }
            None => {
                let (value, next) = after.split_once(',').unwrap_or((after, ""));
                (value.trim(), next)
            }
        };
        if name.trim().eq_ignore_ascii_case(key) {
            return Some(value);
        }
        rest = next;
    }
    None
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// RFC 2831 §2.1.2.1: with charset=utf-8, a string whose characters all fit
/// ISO 8859-1 is hashed in that encoding, as Java's implementation does.
fn encode_8859_1_if_possible(s: &str) -> Vec<u8> {
    if s.chars().all(|c| u32::from(c) <= 0xff) {
        s.chars().map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?')).collect()
    } else {
        s.as_bytes().to_vec()
    }
}

impl DigestMd5 {
    /// An exchange for `user`, to a server named `server_name` for service
    /// `protocol`; `cnonce` is our random nonce.
    pub(crate) fn new(user: &str, password: &str, protocol: &str, server_name: &str, cnonce: String) -> Self {
        let mut digest_uri = String::from(protocol);
        digest_uri.push('/');
        digest_uri.push_str(server_name);
        DigestMd5 { user: user.into(), password: password.into(), digest_uri, cnonce, step: Step::Challenge }
    }

    /// The digest-response to `challenge`, and the rspauth we then expect.
    fn respond(&self, challenge: &str) -> Result<(String, String), SaslError> {
        let nonce = directive(challenge, "nonce").ok_or(SaslError::BadChallenge)?;
        let qop_offered = directive(challenge, "qop").unwrap_or("auth");
        if !qop_offered.split(',').any(|q| q.trim() == "auth") {
            return Err(SaslError::BadChallenge);
        }
        if directive(challenge, "algorithm") != Some("md5-sess") {
            return Err(SaslError::BadChallenge);
        }
        let realm = directive(challenge, "realm").unwrap_or("");
        let utf8 = directive(challenge, "charset").is_some_and(|c| c.eq_ignore_ascii_case("utf-8"));
        let (nc, qop) = ("00000001", "auth");
        let encode = |s: &str| if utf8 { encode_8859_1_if_possible(s) } else { s.as_bytes().to_vec() };

        let mut secret = Md5::new();
        secret.update(encode(&self.user));
        secret.update(b":");
        secret.update(encode(realm));
        secret.update(b":");
        secret.update(encode(&self.password));
        let mut a1 = Md5::new();
        a1.update(secret.finalize());
        a1.update(b":");
        a1.update(nonce.as_bytes());
        a1.update(b":");
        a1.update(self.cnonce.as_bytes());
        let ha1 = hex(&a1.finalize());
        let kd = |a2: &str| {
            let ha2 = hex(&Md5::digest(a2.as_bytes()));
            let mut kd = Md5::new();
            for (i, part) in [ha1.as_str(), nonce, nc, self.cnonce.as_str(), qop, ha2.as_str()].iter().enumerate() {
                if i > 0 {
                    kd.update(b":");
                }
                kd.update(part.as_bytes());
            }
            hex(&kd.finalize())
        };
        let response = kd(&alloc::format!("AUTHENTICATE:{}", self.digest_uri));
        let proof = kd(&alloc::format!(":{}", self.digest_uri));

        let mut out = String::new();
        if utf8 {
            out.push_str("charset=utf-8,");
        }
        let _ = write!(out, "username=\"{}\",", quote(&self.user));
        if directive(challenge, "realm").is_some() {
            let _ = write!(out, "realm=\"{}\",", quote(realm));
        }
        let _ = write!(
            out,
            "nonce=\"{nonce}\",nc={nc},cnonce=\"{}\",digest-uri=\"{}\",maxbuf=65536,response={response},qop={qop}",
            self.cnonce, self.digest_uri
        );
        Ok((out, proof))
    }
}

impl SaslMechanism for DigestMd5 {
    /// DIGEST-MD5 has no initial response: the token is empty.
    fn initial_response(&mut self) -> Result<Vec<u8>, SaslError> {
        Ok(Vec::new())
    }

    /// The challenge gets our digest-response; the server's `rspauth`
    /// must then prove it knows the password.
    fn evaluate_challenge(&mut self, token: &[u8]) -> Result<Option<Vec<u8>>, SaslError> {
        let text = core::str::from_utf8(token).map_err(|_| SaslError::BadChallenge)?;
        match &self.step {
            Step::Challenge => {
                let (response, proof) = self.respond(text)?;
                self.step = Step::Proof(proof);
                Ok(Some(response.into_bytes()))
            }
            Step::Proof(expected) => {
                if directive(text, "rspauth") != Some(expected.as_str()) {
                    return Err(SaslError::BadServerProof);
                }
                self.step = Step::Done;
                Ok(None)
            }
            Step::Done => Err(SaslError::Unexpected),
        }
    }

    fn is_complete(&self) -> bool {
        matches!(self.step, Step::Done)
    }
}

/// Escapes `"` and `\` for a quoted-string.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 2831 §4, the example exchange (IMAP; qop auth). The RFC's challenge
    /// also offers `auth-int,auth-conf` and a cipher list; we answer `auth`.
    #[test]
    fn rfc_2831_example() {
        let mut c = DigestMd5::new("chris", "secret", "imap", "elwood.innosoft.com", "OA6MHXh6VqTrRk".into());
        assert!(c.initial_response().unwrap().is_empty());
        let challenge =
            br#"realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8"#;
        let response = String::from_utf8(c.evaluate_challenge(challenge).unwrap().unwrap()).unwrap();
        assert_eq!(directive(&response, "response"), Some("d388dad90d4bbd760a152321f2143af7"));
        assert_eq!(directive(&response, "username"), Some("chris"));
        assert_eq!(directive(&response, "realm"), Some("elwood.innosoft.com"));
        assert_eq!(directive(&response, "digest-uri"), Some("imap/elwood.innosoft.com"));
        assert_eq!(directive(&response, "cnonce"), Some("OA6MHXh6VqTrRk"));
        assert_eq!(directive(&response, "nc"), Some("00000001"));
        assert_eq!(directive(&response, "qop"), Some("auth"));
        assert!(!c.is_complete());
        assert_eq!(c.evaluate_challenge(b"rspauth=ea40f60335c427b5527b84dbabcdfffd").unwrap(), None);
        assert!(c.is_complete());
        assert_eq!(c.evaluate_challenge(b"x=y"), Err(SaslError::Unexpected));
    }

    #[test]
    fn a_wrong_server_proof_fails() {
        let mut c = DigestMd5::new("chris", "secret", "imap", "elwood.innosoft.com", "OA6MHXh6VqTrRk".into());
        let challenge = br#"realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess"#;
        c.evaluate_challenge(challenge).unwrap();
        assert_eq!(c.evaluate_challenge(b"rspauth=00000000000000000000000000000000"), Err(SaslError::BadServerProof));
        assert!(!c.is_complete());
    }

    #[test]
    fn bad_challenges_are_refused() {
        let new = || DigestMd5::new("u", "p", ZK_PROTOCOL, ZK_SERVER_NAME, "c".into());
        for bad in [
            &b"realm=\"r\",algorithm=md5-sess"[..],
            b"nonce=\"n\",algorithm=md5-sess,qop=\"auth-conf\"",
            b"nonce=\"n\"",
        ] {
            assert_eq!(new().evaluate_challenge(bad), Err(SaslError::BadChallenge), "{bad:?}");
        }
        assert_eq!(new().evaluate_challenge(&[0xff, 0xfe]), Err(SaslError::BadChallenge));
    }

    #[test]
    fn directives_parse_quoted_and_bare_values() {
        let text = r#"realm="a,b",nonce="x\"y",qop="auth,auth-int",algorithm=md5-sess , charset=utf-8"#;
        assert_eq!(directive(text, "realm"), Some("a,b"));
        assert_eq!(directive(text, "nonce"), Some(r#"x\"y"#));
        assert_eq!(directive(text, "qop"), Some("auth,auth-int"));
        assert_eq!(directive(text, "algorithm"), Some("md5-sess"));
        assert_eq!(directive(text, "charset"), Some("utf-8"));
        assert_eq!(directive(text, "missing"), None);
        assert_eq!(directive("unterminated=\"x", "unterminated"), None);
    }

    #[test]
    fn latin1_names_hash_as_8859_1() {
        assert_eq!(encode_8859_1_if_possible("é"), [0xe9]);
        assert_eq!(encode_8859_1_if_possible("€"), "€".as_bytes());
    }
}

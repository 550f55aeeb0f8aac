//! Records shared by many requests and replies: Stat, ACL, Id, ClientInfo.

use alloc::string::String;
use alloc::vec::Vec;

use bytes::{BufMut, BytesMut};

use crate::Encode;
use crate::codes::Perms;
use crate::primitive::{PResult, int, long, put_ustring, ustring, ustring_len};

/// A node's metadata, 68 bytes on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Stat {
    /// Zxid of the create.
    pub czxid: i64,
    /// Zxid of the last setData.
    pub mzxid: i64,
    /// Creation time, ms since the epoch (leader's clock).
    pub ctime: i64,
    /// Last modification time, ms since the epoch.
    pub mtime: i64,
    /// Data version.
    pub version: i32,
    /// Child version as shown to clients (creates + deletes of children).
    pub cversion: i32,
    /// ACL version.
    pub aversion: i32,
    /// Owning session for ephemerals, else 0.
    pub ephemeral_owner: i64,
    /// Data length in bytes.
    pub data_length: i32,
    /// Number of children.
    pub num_children: i32,
    /// Zxid of the last child create or delete.
    pub pzxid: i64,
}

impl Stat {
    /// Encoded size.
    pub const LEN: usize = 68;

    pub(crate) fn parse(i: &[u8]) -> PResult<'_, Stat> {
        let (i, czxid) = long(i)?;
        let (i, mzxid) = long(i)?;
        let (i, ctime) = long(i)?;
        let (i, mtime) = long(i)?;
        let (i, version) = int(i)?;
        let (i, cversion) = int(i)?;
        let (i, aversion) = int(i)?;
        let (i, ephemeral_owner) = long(i)?;
        let (i, data_length) = int(i)?;
        let (i, num_children) = int(i)?;
        let (i, pzxid) = long(i)?;
        Ok((
            i,
            Stat {
                czxid,
                mzxid,
                ctime,
                mtime,
                version,
                cversion,
                aversion,
                ephemeral_owner,
                data_length,
                num_children,
                pzxid,
            },
        ))
    }
}

impl Encode for Stat {
    fn encoded_len(&self) -> usize {
        Self::LEN
    }

    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i64(self.czxid);
        buf.put_i64(self.mzxid);
        buf.put_i64(self.ctime);
        buf.put_i64(self.mtime);
        buf.put_i32(self.version);
        buf.put_i32(self.cversion);
        buf.put_i32(self.aversion);
        buf.put_i64(self.ephemeral_owner);
        buf.put_i32(self.data_length);
        buf.put_i32(self.num_children);
        buf.put_i64(self.pzxid);
    }
}

/// An identity: scheme plus id (`world:anyone`, `digest:user:hash`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Id {
    /// The auth scheme.
    pub scheme: String,
    /// The id within the scheme.
    pub id: String,
}

impl Id {
    pub(crate) fn parse(i: &[u8]) -> PResult<'_, Id> {
        let (i, scheme) = ustring(i)?;
        let (i, id) = ustring(i)?;
        Ok((i, Id { scheme, id }))
    }
}

impl Encode for Id {
    fn encoded_len(&self) -> usize {
        ustring_len(&self.scheme) + ustring_len(&self.id)
    }

    fn encode(&self, buf: &mut BytesMut) {
        put_ustring(buf, &self.scheme);
        put_ustring(buf, &self.id);
    }
}

/// One ACL entry: permissions granted to an identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Acl {
    /// Permission bits.
    pub perms: Perms,
    /// Who gets them.
    pub id: Id,
}

impl Acl {
    /// Minimum encoded size (perms + two empty strings).
    pub(crate) const MIN_LEN: usize = 12;

    /// `world:anyone` with every permission (ZooKeeper's OPEN_ACL_UNSAFE entry).
    pub fn open_unsafe() -> Vec<Acl> {
        alloc::vec![Acl { perms: Perms::ALL, id: Id { scheme: "world".into(), id: "anyone".into() } }]
    }

    /// Every permission for the session's authenticated ids (CREATOR_ALL_ACL).
    pub fn creator_all() -> Vec<Acl> {
        alloc::vec![Acl { perms: Perms::ALL, id: Id { scheme: "auth".into(), id: String::new() } }]
    }

    /// `world:anyone` with read only (READ_ACL_UNSAFE).
    pub fn read_unsafe() -> Vec<Acl> {
        alloc::vec![Acl { perms: Perms::READ, id: Id { scheme: "world".into(), id: "anyone".into() } }]
    }

    pub(crate) fn parse(i: &[u8]) -> PResult<'_, Acl> {
        let (i, perms) = int(i)?;
        let (i, id) = Id::parse(i)?;
        Ok((i, Acl { perms: Perms(perms), id }))
    }
}

impl Encode for Acl {
    fn encoded_len(&self) -> usize {
        4 + self.id.encoded_len()
    }

    fn encode(&self, buf: &mut BytesMut) {
        buf.put_i32(self.perms.0);
        self.id.encode(buf);
    }
}

/// One identity in a whoAmI reply.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientInfo {
    /// The auth scheme.
    pub auth_scheme: String,
    /// The user within the scheme.
    pub user: String,
}

impl ClientInfo {
    pub(crate) fn parse(i: &[u8]) -> PResult<'_, ClientInfo> {
        let (i, auth_scheme) = ustring(i)?;
        let (i, user) = ustring(i)?;
        Ok((i, ClientInfo { auth_scheme, user }))
    }
}

impl Encode for ClientInfo {
    fn encoded_len(&self) -> usize {
        ustring_len(&self.auth_scheme) + ustring_len(&self.user)
    }

    fn encode(&self, buf: &mut BytesMut) {
        put_ustring(buf, &self.auth_scheme);
        put_ustring(buf, &self.user);
    }
}

pub(crate) fn acls_len(acl: &[Acl]) -> usize {
    4 + acl.iter().map(Encode::encoded_len).sum::<usize>()
}

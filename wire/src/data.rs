//! Records shared by many requests and replies: Stat, ACL, Id, ClientInfo.

use alloc::string::String;
use alloc::vec::Vec;

use crate::codes::Perms;
use crate::primitive::{Field, record};

record! {
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
}

impl Stat {
    /// Encoded size.
    pub const LEN: usize = 68;
}

const _: () = assert!(Stat::LEN == <Stat as Field>::MIN_LEN);

record! {
    /// An identity: scheme plus id (`world:anyone`, `digest:user:hash`, ...).
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct Id {
        /// The auth scheme.
        pub scheme: String,
        /// The id within the scheme.
        pub id: String,
    }
}

record! {
    /// One ACL entry: permissions granted to an identity.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct Acl {
        /// Permission bits.
        pub perms: Perms,
        /// Who gets them.
        pub id: Id,
    }
}

impl Acl {
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
}

record! {
    /// One identity in a whoAmI reply.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct ClientInfo {
        /// The auth scheme.
        pub auth_scheme: String,
        /// The user within the scheme.
        pub user: String,
    }
}

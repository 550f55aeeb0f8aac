//! Open sets of wire integers as newtypes with named constants. Unknown values
//! stay representable, so a newer server never makes decoding fail on a code.

use core::fmt;

/// Defines an `i32` newtype with named constants, a `name()` lookup and a
/// `Display` that prints the name (or the raw number when unknown).
macro_rules! wire_code {
    (
        $(#[$meta:meta])*
        $ty:ident { $( $(#[$cmeta:meta])* $konst:ident = $val:expr => $name:literal, )* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $ty(pub i32);

        impl $ty {
            $( $(#[$cmeta])* pub const $konst: $ty = $ty($val); )*

            /// The protocol's name for this value, or `None` when unknown.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $val => Some($name), )*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{}({})", stringify!($ty), self.0),
                }
            }
        }

        impl From<i32> for $ty {
            fn from(v: i32) -> Self {
                $ty(v)
            }
        }
    };
}

wire_code! {
    /// A request type (`RequestHeader.type`, `MultiHeader.type`).
    OpCode {
        /// Marks a watch notification; never sent.
        NOTIFICATION = 0 => "notification",
        /// Create a node; replies with its path.
        CREATE = 1 => "create",
        /// Delete a node.
        DELETE = 2 => "delete",
        /// Stat a node, optionally watching it.
        EXISTS = 3 => "exists",
        /// Read a node's data.
        GET_DATA = 4 => "getData",
        /// Write a node's data.
        SET_DATA = 5 => "setData",
        /// Read a node's ACL.
        GET_ACL = 6 => "getACL",
        /// Write a node's ACL.
        SET_ACL = 7 => "setACL",
        /// List children.
        GET_CHILDREN = 8 => "getChildren",
        /// Sync the server with the leader.
        SYNC = 9 => "sync",
        /// Keep-alive (xid -2).
        PING = 11 => "ping",
        /// List children plus the parent's Stat.
        GET_CHILDREN2 = 12 => "getChildren2",
        /// Version check (inside multi only).
        CHECK = 13 => "check",
        /// Atomic multi-op transaction.
        MULTI = 14 => "multi",
        /// Create, replying with path and Stat.
        CREATE2 = 15 => "create2",
        /// Dynamic reconfiguration.
        RECONFIG = 16 => "reconfig",
        /// Ask whether a watch is registered.
        CHECK_WATCHES = 17 => "checkWatches",
        /// Remove a watch.
        REMOVE_WATCHES = 18 => "removeWatches",
        /// Create a container node.
        CREATE_CONTAINER = 19 => "createContainer",
        /// Server-internal container deletion.
        DELETE_CONTAINER = 20 => "deleteContainer",
        /// Create a node with a TTL.
        CREATE_TTL = 21 => "createTTL",
        /// Several reads, each with its own result.
        MULTI_READ = 22 => "multiRead",
        /// Add credentials (xid -4).
        AUTH = 100 => "auth",
        /// Re-arm watches after a reconnect.
        SET_WATCHES = 101 => "setWatches",
        /// SASL token exchange.
        SASL = 102 => "sasl",
        /// List this session's ephemerals.
        GET_EPHEMERALS = 103 => "getEphemerals",
        /// Count all descendants.
        GET_ALL_CHILDREN_NUMBER = 104 => "getAllChildrenNumber",
        /// Re-arm watches, persistent ones included.
        SET_WATCHES2 = 105 => "setWatches2",
        /// Add a persistent (recursive) watch.
        ADD_WATCH = 106 => "addWatch",
        /// Ask which identities the session has.
        WHO_AM_I = 107 => "whoAmI",
        /// Server-internal session creation.
        CREATE_SESSION = -10 => "createSession",
        /// End the session.
        CLOSE_SESSION = -11 => "closeSession",
        /// Error marker in multi results.
        ERROR = -1 => "error",
    }
}

wire_code! {
    /// A result code (`ReplyHeader.err`, multi `ErrorResult`).
    ErrorCode {
        /// Success.
        OK = 0 => "OK",
        /// Range marker; never sent.
        SYSTEM_ERROR = -1 => "SystemError",
        /// A multi op after the failing one.
        RUNTIME_INCONSISTENCY = -2 => "RuntimeInconsistency",
        /// Data inconsistency.
        DATA_INCONSISTENCY = -3 => "DataInconsistency",
        /// Client-generated: the connection dropped with the request in flight.
        CONNECTION_LOSS = -4 => "ConnectionLoss",
        /// The server could not decode the request.
        MARSHALLING_ERROR = -5 => "MarshallingError",
        /// Unknown opcode or feature disabled; the connection is closed.
        UNIMPLEMENTED = -6 => "Unimplemented",
        /// Client-side timeout.
        OPERATION_TIMEOUT = -7 => "OperationTimeout",
        /// Invalid path or flags.
        BAD_ARGUMENTS = -8 => "BadArguments",
        /// Internal: unknown session.
        UNKNOWN_SESSION = -12 => "UnknownSession",
        /// Reconfig without a quorum.
        NEW_CONFIG_NO_QUORUM = -13 => "NewConfigNoQuorum",
        /// Reconfig already running.
        RECONFIG_IN_PROGRESS = -14 => "ReconfigInProgress",
        /// Range marker; never sent.
        API_ERROR = -100 => "APIError",
        /// The node (or its parent) does not exist.
        NO_NODE = -101 => "NoNode",
        /// Permission denied.
        NO_AUTH = -102 => "NoAuth",
        /// Version mismatch.
        BAD_VERSION = -103 => "BadVersion",
        /// Ephemeral nodes may not have children.
        NO_CHILDREN_FOR_EPHEMERALS = -108 => "NoChildrenForEphemerals",
        /// The node already exists.
        NODE_EXISTS = -110 => "NodeExists",
        /// The node has children.
        NOT_EMPTY = -111 => "NotEmpty",
        /// The session has expired.
        SESSION_EXPIRED = -112 => "SessionExpired",
        /// Client-side: bad callback.
        INVALID_CALLBACK = -113 => "InvalidCallback",
        /// Invalid ACL.
        INVALID_ACL = -114 => "InvalidACL",
        /// Authentication failed; the connection is closed.
        AUTH_FAILED = -115 => "AuthFailed",
        /// The session moved to another server.
        SESSION_MOVED = -118 => "SessionMoved",
        /// Write sent to a read-only server.
        NOT_READ_ONLY = -119 => "NotReadOnly",
        /// Ephemeral create on a local session.
        EPHEMERAL_ON_LOCAL_SESSION = -120 => "EphemeralOnLocalSession",
        /// No such watch.
        NO_WATCHER = -121 => "NoWatcher",
        /// Client-side request timeout.
        REQUEST_TIMEOUT = -122 => "RequestTimeout",
        /// Reconfig disabled.
        RECONFIG_DISABLED = -123 => "ReconfigDisabled",
        /// The server requires SASL authentication.
        SESSION_CLOSED_REQUIRE_SASL_AUTH = -124 => "SessionClosedRequireSaslAuth",
        /// Hard quota exceeded.
        QUOTA_EXCEEDED = -125 => "QuotaExceeded",
        /// Request throttled; retry with back-off.
        THROTTLED_OP = -127 => "ThrottledOp",
    }
}

impl OpCode {
    /// Whether a follower forwards this request to the leader (a write,
    /// `check`, `sync`, `closeSession`): the leader answers it, while a
    /// follower answers reads and pings alone.
    pub const fn is_forwarded_to_leader(self) -> bool {
        matches!(
            self,
            OpCode::CREATE
                | OpCode::CREATE2
                | OpCode::CREATE_CONTAINER
                | OpCode::CREATE_TTL
                | OpCode::DELETE
                | OpCode::DELETE_CONTAINER
                | OpCode::SET_DATA
                | OpCode::SET_ACL
                | OpCode::CHECK
                | OpCode::MULTI
                | OpCode::SYNC
                | OpCode::RECONFIG
                | OpCode::CLOSE_SESSION
        )
    }
}

impl ErrorCode {
    /// True for [`ErrorCode::OK`].
    pub const fn is_ok(self) -> bool {
        self.0 == 0
    }
}

wire_code! {
    /// A watch notification's event type.
    EventType {
        /// Client-local connection state change.
        NONE = -1 => "None",
        /// A watched missing node was created.
        NODE_CREATED = 1 => "NodeCreated",
        /// A watched node was deleted.
        NODE_DELETED = 2 => "NodeDeleted",
        /// A watched node's data changed.
        NODE_DATA_CHANGED = 3 => "NodeDataChanged",
        /// A watched node's children changed.
        NODE_CHILDREN_CHANGED = 4 => "NodeChildrenChanged",
        /// Client-local: a data watch was removed.
        DATA_WATCH_REMOVED = 5 => "DataWatchRemoved",
        /// Client-local: a child watch was removed.
        CHILD_WATCH_REMOVED = 6 => "ChildWatchRemoved",
        /// Client-local: a persistent watch was removed.
        PERSISTENT_WATCH_REMOVED = 7 => "PersistentWatchRemoved",
    }
}

wire_code! {
    /// A watch notification's keeper state. Servers only send SyncConnected.
    KeeperState {
        /// Deprecated.
        UNKNOWN = -1 => "Unknown",
        /// Client-local.
        DISCONNECTED = 0 => "Disconnected",
        /// Deprecated, unused.
        NO_SYNC_CONNECTED = 1 => "NoSyncConnected",
        /// The only state a server puts in a notification.
        SYNC_CONNECTED = 3 => "SyncConnected",
        /// Client-local.
        AUTH_FAILED = 4 => "AuthFailed",
        /// Client-local.
        CONNECTED_READ_ONLY = 5 => "ConnectedReadOnly",
        /// Client-local.
        SASL_AUTHENTICATED = 6 => "SaslAuthenticated",
        /// Client-local.
        CLOSED = 7 => "Closed",
        /// Client-local.
        EXPIRED = -112 => "Expired",
    }
}

wire_code! {
    /// The watch kind in checkWatches and removeWatches.
    WatcherType {
        /// Child watches.
        CHILDREN = 1 => "Children",
        /// Data and exist watches.
        DATA = 2 => "Data",
        /// Every kind.
        ANY = 3 => "Any",
        /// Persistent watches.
        PERSISTENT = 4 => "Persistent",
        /// Persistent recursive watches.
        PERSISTENT_RECURSIVE = 5 => "PersistentRecursive",
    }
}

wire_code! {
    /// The mode of an addWatch request.
    AddWatchMode {
        /// Persistent data and child watch on one path.
        PERSISTENT = 0 => "Persistent",
        /// Persistent watch on a path and every descendant.
        PERSISTENT_RECURSIVE = 1 => "PersistentRecursive",
    }
}

wire_code! {
    /// CreateRequest flags: an enumeration, not a bitmask.
    CreateMode {
        /// Persistent node.
        PERSISTENT = 0 => "PERSISTENT",
        /// Deleted when the owning session ends.
        EPHEMERAL = 1 => "EPHEMERAL",
        /// Persistent with a 10-digit sequence suffix.
        PERSISTENT_SEQUENTIAL = 2 => "PERSISTENT_SEQUENTIAL",
        /// Ephemeral with a sequence suffix: the lock-node mode.
        EPHEMERAL_SEQUENTIAL = 3 => "EPHEMERAL_SEQUENTIAL",
        /// Deleted by the server once empty (createContainer only).
        CONTAINER = 4 => "CONTAINER",
        /// Persistent with a TTL (createTTL only).
        PERSISTENT_WITH_TTL = 5 => "PERSISTENT_WITH_TTL",
        /// Persistent sequential with a TTL (createTTL only).
        PERSISTENT_SEQUENTIAL_WITH_TTL = 6 => "PERSISTENT_SEQUENTIAL_WITH_TTL",
    }
}

impl CreateMode {
    /// True when the server owns the node to the creating session.
    pub const fn is_ephemeral(self) -> bool {
        matches!(self.0, 1 | 3)
    }

    /// True when the server appends a sequence suffix.
    pub const fn is_sequential(self) -> bool {
        matches!(self.0, 2 | 3 | 6)
    }
}

/// The xid of a request or reply. Positive xids are ordinary requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Xid(pub i32);

impl Xid {
    /// A watch notification (server to client only).
    pub const NOTIFICATION: Xid = Xid(-1);
    /// A ping and its reply.
    pub const PING: Xid = Xid(-2);
    /// An auth packet and its reply.
    pub const AUTH: Xid = Xid(-4);
    /// The C client's setWatches xid (the Java client uses an ordinary one).
    pub const SET_WATCHES: Xid = Xid(-8);

    /// True for an ordinary (positive) request xid.
    pub const fn is_ordinary(self) -> bool {
        self.0 > 0
    }
}

impl fmt::Display for Xid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// ACL permission bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Perms(pub i32);

impl Perms {
    /// Read data and list children.
    pub const READ: Perms = Perms(1);
    /// Write data.
    pub const WRITE: Perms = Perms(2);
    /// Create children.
    pub const CREATE: Perms = Perms(4);
    /// Delete children.
    pub const DELETE: Perms = Perms(8);
    /// Change the ACL.
    pub const ADMIN: Perms = Perms(16);
    /// Every permission.
    pub const ALL: Perms = Perms(31);

    /// True when every bit of `other` is set here.
    pub const fn contains(self, other: Perms) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for Perms {
    type Output = Perms;
    fn bitor(self, rhs: Perms) -> Perms {
        Perms(self.0 | rhs.0)
    }
}

//! Settings shared by every lock recipe.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;

use bytes::Bytes;
use zoolock_wire::Acl;

use crate::acl::AclPolicy;
use crate::gzip::Compression;
use crate::rng::Rng;

use super::naming::LockName;

/// Which op sequence a recipe emits. Both use the same nodes and names, so
/// they interoperate with each other and with Curator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OpPlan {
    /// Curator 5.4.0's exact sequence, one request per round trip (for
    /// conformance replay against recorded traces).
    Curator,
    /// Curator 5.7.1's exact sequence: 5.4.0's, except what 5.5 to 5.7
    /// changed on the wire. Missing parents are probed from the node's
    /// parent up to the first one that exists (CURATOR-715), and a
    /// downgrade's read node takes the held write node's sequence
    /// (CURATOR-621), as the Pipelined plan does both.
    Curator57,
    /// The default: create2 and getChildren2 go out back to back (an
    /// uncontended acquire is one round trip), release returns once the
    /// delete is queued (it stays guaranteed), and a deleted predecessor is
    /// handed off without a re-list when the last listing proves it safe.
    #[default]
    Pipelined,
}

/// The retry budget for re-creating a vanished node (Curator's
/// `ExponentialBackoffRetry`): at most `max_retries` retries, the `n`-th
/// (from 0) after [`RetryPolicy::pause`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Base pause.
    pub base: Duration,
    /// Retries allowed.
    pub max_retries: u32,
    /// Longest single pause.
    pub max_pause: Duration,
}

impl OpPlan {
    /// Missing parents are probed bottom-up (Curator 5.7's mkdirs): an
    /// ancestor that exists is never read, so a lock under a parent the
    /// client may not read works where exists checks READ (ZooKeeper 3.9).
    pub(crate) fn probes_bottom_up(self) -> bool {
        !matches!(self, OpPlan::Curator)
    }

    /// A downgrade's read node reuses the write node's sequence (Curator
    /// 5.5+), so no writer queued meanwhile overtakes it.
    pub(crate) fn downgrade_keeps_sequence(self) -> bool {
        !matches!(self, OpPlan::Curator)
    }
}

impl RetryPolicy {
    /// The pause before retry `n` (from 0), as Curator draws it:
    /// `base × max(1, R)` with `R` uniform in `[0, 2^(n+1))`, at most
    /// `max_pause`, at least 1 ms (a zero pause would spin).
    pub fn pause(&self, n: u32, rng: &mut Rng) -> Duration {
        let factor = (rng.next_u64() % (1u64 << (n + 1).min(30))).max(1);
        let pause = self.base.saturating_mul(u32::try_from(factor).unwrap_or(u32::MAX)).min(self.max_pause);
        pause.max(Duration::from_millis(1))
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { base: Duration::from_millis(100), max_retries: 3, max_pause: Duration::from_secs(5) }
    }
}

/// Settings for one lock recipe instance.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LockConfig {
    /// The op plan.
    pub plan: OpPlan,
    /// Data written into our lock node. Curator writes the local address;
    /// the driver fills that in. Revocable locks always write empty data.
    pub data: Bytes,
    /// How the data the recipe writes is framed: lock and lease node data
    /// (empty data too) and a shared count's value. [`Compression::Gzip`]
    /// for fleets whose Curator clients run with `enableCompression()`.
    /// Data read is accepted plain or gzip either way.
    pub compression: Compression,
    /// ACL of lock nodes and of the parents we create.
    pub acl: Vec<Acl>,
    /// Per-prefix ACLs; when set, it decides every node's ACL and `acl` is
    /// its default.
    pub acl_policy: Option<AclPolicy>,
    /// Create missing parents as containers (opcode 19); falls back to
    /// persistent nodes when the server answers Unimplemented.
    pub container_parents: bool,
    /// Budget for re-creating a node that vanished while waiting.
    pub retry: RetryPolicy,
    /// Seeds protection UUIDs and retry jitter of a lock built from this
    /// config. A [`SharedLockConfig`] gives each lock its own seed instead.
    pub seed: u64,
    /// The fast-handoff assumption of the Pipelined plan: only Curator-keyed
    /// names live on this path, so nodes ahead of ours can only disappear.
    /// It is applied only when every child in the last listing has a
    /// 10-digit sequence key. With it a waiter also watches the node just
    /// ahead of its predecessor and lists again when that one goes, so the
    /// predecessor's deletion is the grant (one more getData per waiter).
    /// Off whatever this says under a [`LockName`] sorted by its trailing
    /// digits ([`SortRule::TrailingDigits`](super::SortRule)).
    pub fast_handoff: bool,
    /// Watch each held node, so that its deletion by anyone else (an
    /// operator, a buggy client) makes the hold `Lost` at once rather than
    /// leaving it `Held` while another process takes the lock. One exists
    /// (with a watch) per grant, sent after the grant and not waited for,
    /// and one notification when the holder deletes its own node. Curator
    /// does not watch a held node: trace replay of Curator's sequences turns
    /// this off, nothing else should.
    pub watch_held: bool,
    /// The lock's node name and sort rule (Curator's `LockInternalsDriver`):
    /// `lock-` by default, `latch-` for a `LeaderLatch`. Used by
    /// [`Mutex`](super::Mutex) (and so by elections); the read-write lock
    /// and the semaphore keep Curator's fixed names (`__READ__`,
    /// `__WRIT__`, `lock-`, `lease-`).
    pub name: LockName,
    /// The longest a hold may last: once this much has passed since the
    /// grant (the `now` of the reply that granted it), the hold is `Lost`
    /// (reported first as [`RecipeEvent::Expired`](crate::RecipeEvent)) and
    /// its node is deleted, so a holder that hangs with its session alive
    /// cannot block the others forever. `None` (the default): no limit. For
    /// a semaphore, each lease on its own.
    pub max_hold: Option<Duration>,
}

impl LockConfig {
    /// Defaults: Pipelined plan, empty data, open ACL, container parents.
    pub fn new(seed: u64) -> Self {
        LockConfig {
            plan: OpPlan::default(),
            data: Bytes::new(),
            compression: Compression::None,
            acl: Acl::open_unsafe(),
            acl_policy: None,
            container_parents: true,
            retry: RetryPolicy::default(),
            seed,
            fast_handoff: true,
            watch_held: true,
            name: LockName::lock(),
            max_hold: None,
        }
    }

    /// Sets the op plan.
    pub fn with_plan(mut self, plan: OpPlan) -> Self {
        self.plan = plan;
        self
    }

    /// Sets the node data.
    pub fn with_data(mut self, data: Bytes) -> Self {
        self.data = data;
        self
    }

    /// Sets how written data is framed.
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Sets the node name and sort rule ([`LockConfig::name`]).
    pub fn with_name(mut self, name: LockName) -> Self {
        self.name = name;
        self
    }

    /// Sets the longest a hold may last ([`LockConfig::max_hold`]).
    pub fn max_hold(mut self, max_hold: Duration) -> Self {
        self.max_hold = Some(max_hold);
        self
    }

    /// Sets [`LockConfig::watch_held`] (on by default).
    pub fn with_watch_held(mut self, watch_held: bool) -> Self {
        self.watch_held = watch_held;
        self
    }

    /// Takes each node's ACL (lock nodes and the parents created for them)
    /// from `policy`.
    pub fn with_acl_policy(mut self, policy: AclPolicy) -> Self {
        self.acl = policy.default_acl().to_vec();
        self.acl_policy = Some(policy);
        self
    }

    /// The ACL a node created at `path` gets.
    pub fn acl_for(&self, path: &str) -> Vec<Acl> {
        match &self.acl_policy {
            Some(policy) => policy.acl_for(path).to_vec(),
            None => self.acl.clone(),
        }
    }
}

/// What a lock is built from: a [`LockConfig`] shared by every lock built
/// with the same settings, and the lock's own seed (its protection UUIDs and
/// retry jitter). Thousands of locks of one client then hold one copy of the
/// ACL, data and name, not one each.
///
/// A plain [`LockConfig`] converts into one (its [`LockConfig::seed`] is the
/// seed), so every recipe constructor also takes a `LockConfig`.
#[derive(Debug, Clone)]
pub struct SharedLockConfig {
    config: Arc<LockConfig>,
    seed: u64,
}

impl SharedLockConfig {
    /// `config` for a lock seeded with `seed` (the config's own
    /// [`LockConfig::seed`] is not used).
    pub fn new(config: Arc<LockConfig>, seed: u64) -> SharedLockConfig {
        SharedLockConfig { config, seed }
    }

    /// The settings.
    pub fn config(&self) -> &LockConfig {
        &self.config
    }

    /// The lock's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The same settings, shared, for a lock seeded with `seed` (a
    /// composite's member, a semaphore's lease).
    pub fn with_seed(&self, seed: u64) -> SharedLockConfig {
        SharedLockConfig { config: self.config.clone(), seed }
    }

    /// An owned copy of the settings, with this lock's seed.
    pub fn to_config(&self) -> LockConfig {
        LockConfig { seed: self.seed, ..LockConfig::clone(&self.config) }
    }

    /// The shared settings.
    pub(crate) fn into_shared(self) -> Arc<LockConfig> {
        self.config
    }

    /// The settings changed by `change`, copied first if other locks share
    /// them (they keep theirs).
    pub(crate) fn modified(mut self, change: impl FnOnce(&mut LockConfig)) -> SharedLockConfig {
        change(Arc::make_mut(&mut self.config));
        self
    }
}

impl From<LockConfig> for SharedLockConfig {
    fn from(config: LockConfig) -> SharedLockConfig {
        let seed = config.seed;
        SharedLockConfig { config: Arc::new(config), seed }
    }
}

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.SessionConnectionStateErrorPolicy;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.ZKPaths;

/**
 * zoolock's interop driver: Curator lock recipes driven over a line protocol
 * on stdin/stdout by zoolock-testkit's java module (testkit/src/java.rs), for
 * the interop tests (conformance/tests/interop*.rs and others).
 *
 * Every command after CONNECT is "VERB ID ARGS..." and every reply is
 * "WORD ID ...", so the caller routes replies by ID. Each ID is one Curator
 * contender: it gets its own single-thread executor (Curator locks belong to
 * the thread that acquired them, so acquire and release of an ID run on the
 * same thread, and a blocked acquire never blocks the command reader) and its
 * own CuratorFramework, i.e. its own ZooKeeper session, created on first use.
 *
 * Timestamps are wall-clock microseconds since the Unix epoch
 * (java.time.Instant.now(), CLOCK_REALTIME), so that a Rust process on the
 * same machine (SystemTime::now()) can put both sides on one time line.
 *
 *   CONNECT <connectString> <sessionTimeoutMs> [namespace]   -> CONNECTED _
 *                                                (namespace: every client is built with
 *                                                CuratorFrameworkFactory.builder().namespace(it))
 *   MUTEX_ACQUIRE <id> <path> [timeoutMs]        -> ACQUIRED <id> <node> <us> | TIMEOUT <id> <us>
 *   READ_ACQUIRE / WRITE_ACQUIRE <id> <path> [timeoutMs]   (InterProcessReadWriteLock halves)
 *   MULTI_ACQUIRE <id> <path,path,...> [timeoutMs]         (InterProcessMultiLock of mutexes on the
 *                                                paths; node = the last path's mutex node)
 *   REVOCABLE_ACQUIRE <id> <path> [timeoutMs]    mutex with makeRevocable; on revocation prints
 *                                                REVOKE_REQUESTED <id> <us>, then releases on the
 *                                                owning thread: RELEASED <id> <exitUs> <doneUs>
 *   SEM_ACQUIRE <id> <path> <maxLeases> [timeoutMs]        (InterProcessSemaphoreV2, one lease;
 *                                                node = the lease's full path; Lease.getNodeName()
 *                                                itself is the bare name)
 *   SEMCOUNT_ACQUIRE <id> <path> <countPath> [timeoutMs]   (InterProcessSemaphoreV2 sized by a started
 *                                                SharedCount(countPath, seed 1); replies as SEM_ACQUIRE)
 *   COUNT_GET <id> <path>                        SharedCount(path, seed 0).getCount() -> COUNT <id> <n>
 *   COUNT_SET <id> <path> <n>                    SharedCount(path, seed n).setCount(n) -> COUNT <id> <n>
 *   SEMMUTEX_ACQUIRE <id> <path> [timeoutMs]     (InterProcessSemaphoreMutex; node = its lease)
 *   DOWNGRADE <id>                               holding WRITE: acquire the paired read half, release
 *                                                write -> DOWNGRADED <id> <readNode> <us>
 *   MUTEX_RELEASE / READ_RELEASE / WRITE_RELEASE / REVOCABLE_RELEASE / SEM_RETURN /
 *   SEMMUTEX_RELEASE <id>                        -> RELEASED <id> <exitUs> <doneUs>
 *                                                (exitUs is read just before release())
 *   REVOKE <id> <node>                           Revoker.attemptRevoke -> REVOKE_SENT <id>
 *   GZIP_SET <id> <path> x<hex>                  setData().compressed(), as Curator 5.8+ writes with
 *                                                enableCompression() -> SET <id>
 *   GZIP_GET <id> <path>                         getData().decompressed() -> DATA <id> x<hex>
 *   PARTICIPANTS <id> mutex|read|write|semaphore <path>
 *                                                -> NODES <id> <n> <node>... (Curator's order)
 *   SELECTOR_START <id> <path> <participantId> <holdMs> [session]
 *                                                (session: the ID's client, made now, has
 *                                                SessionConnectionStateErrorPolicy -> POLICY <id> <its
 *                                                policy's class name>, before anything else)
 *                                                a LeaderSelector with setId(participantId) and
 *                                                autoRequeue(); each term prints LEADER <id> <us>,
 *                                                holds holdMs, then prints RESIGN <id> <us> just before
 *                                                takeLeadership returns (also when interrupted)
 *   SELECTOR_STOP <id>                           close(), and the term under way ended -> STOPPED <id>
 *   LATCH_START <id> <path> <participantId> <holdMs> <terms>
 *                                                <terms> times: a new LeaderLatch(path, participantId),
 *                                                start, await, LEADER <id> <us>, hold holdMs,
 *                                                RESIGN <id> <us>, close(); then STOPPED <id>
 *   LEADER_OF <id> selector|latch <path>         getLeader() -> LEADER_IS <id> <participantId> <isLeader>
 *                                                (participantId "-" when empty: no leader)
 *   ELECTORATE <id> selector|latch <path>        getParticipants() -> IDS <id> <n> <participantId>:<isLeader>...
 *   CLOSE <id>                                   closes the ID's session -> CLOSED <id>
 *   QUIT                                         closes everything -> BYE _ and exits
 *   HOLD_UNTIL_TOLD <id> <connectString> <path> <workMs> <maxMs>
 *                                                a holder that obeys its connection listener: its
 *                                                own client on connectString (not the CONNECT one),
 *                                                a mutex on path -> ACQUIRED <id> <node> <us>; then
 *                                                WORK <id> <us> every workMs until the listener
 *                                                sees SUSPENDED or LOST (or maxMs pass) ->
 *                                                TOLD <id> <state|NONE> <us>; releases (best
 *                                                effort), closes its client -> DONE <id>
 * Failures: ERROR <id> <exception, one line>.
 */
public final class CuratorDriver {
    private static PrintStream out;
    private static final Object OUT_LOCK = new Object();
    private static String connectString;
    private static int sessionTimeoutMs;
    private static String namespace;
    private static CuratorFramework admin;
    private static final Map<String, Contender> CONTENDERS = new ConcurrentHashMap<>();

    private CuratorDriver() {}

    static long micros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    static void emit(String line) {
        synchronized (OUT_LOCK) {
            out.println(line);
            out.flush();
        }
    }

    static CuratorFramework newClient() throws Exception {
        if (connectString == null) {
            throw new IllegalStateException("CONNECT first");
        }
        return newClient(connectString);
    }

    static CuratorFramework newClient(String connectString) throws Exception {
        return newClient(connectString, false);
    }

    /** sessionPolicy: only LOST is an error state for the recipes (SessionConnectionStateErrorPolicy). */
    static CuratorFramework newClient(String connectString, boolean sessionPolicy) throws Exception {
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs(sessionTimeoutMs)
                .namespace(namespace)
                .connectionTimeoutMs(Math.min(15_000, sessionTimeoutMs))
                .retryPolicy(new ExponentialBackoffRetry(100, 5));
        if (sessionPolicy) {
            builder.connectionStateErrorPolicy(new SessionConnectionStateErrorPolicy());
        }
        CuratorFramework client = builder.build();
        client.start();
        if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("no connection to " + connectString + " within 20 s");
        }
        return client;
    }

    /** A mutex that tells which node it holds. */
    static final class NodeMutex extends InterProcessMutex {
        NodeMutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String node() {
            return getLockPath();
        }
    }

    /** The write half of a read-write lock, telling its node. */
    static final class NodeWrite extends InterProcessReadWriteLock.WriteLock {
        NodeWrite(CuratorFramework client, String path) {
            super(client, path, null);
        }

        String node() {
            return getLockPath();
        }
    }

    /** The read half of a read-write lock, telling its node. */
    static final class NodeRead extends InterProcessReadWriteLock.ReadLock {
        NodeRead(CuratorFramework client, String path) {
            this(client, path, new InterProcessReadWriteLock.WriteLock(client, path, null));
        }

        /** The read half paired with a write half this thread may hold (downgrade). */
        NodeRead(CuratorFramework client, String path, InterProcessReadWriteLock.WriteLock write) {
            super(client, path, null, write);
        }

        String node() {
            return getLockPath();
        }
    }

    /** One Curator contender: its thread, its session, what it holds. */
    static final class Contender {
        final String id;
        final ExecutorService thread;
        CuratorFramework client;
        InterProcessLock lock;
        String lockPath;
        Lease lease;
        /** The count sizing this contender's semaphore, kept started while it lives. */
        SharedCount count;
        /** This contender's running LeaderSelector (SELECTOR_START), if any. */
        volatile LeaderSelector selector;
        /** Inside the selector's takeLeadership. */
        volatile boolean leading;

        Contender(String id) {
            this.id = id;
            this.thread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "contender-" + id);
                t.setDaemon(true);
                return t;
            });
        }

        CuratorFramework client() throws Exception {
            if (client == null) {
                client = newClient();
            }
            return client;
        }

        void submit(String[] cmd) {
            thread.execute(() -> {
                try {
                    run(cmd);
                } catch (Throwable t) {
                    emit("ERROR " + id + " " + String.valueOf(t).replace('\n', ' '));
                }
            });
        }

        void run(String[] cmd) throws Exception {
            switch (cmd[0]) {
                case "MUTEX_ACQUIRE" -> {
                    NodeMutex m = new NodeMutex(client(), cmd[2]);
                    acquired(m, acquire(m, cmd, 3), m::node);
                }
                case "HOLD_UNTIL_TOLD" -> holdUntilTold(cmd[2], cmd[3], Long.parseLong(cmd[4]),
                        Long.parseLong(cmd[5]));
                case "REVOCABLE_ACQUIRE" -> {
                    NodeMutex m = new NodeMutex(client(), cmd[2]);
                    m.makeRevocable(revoked -> {
                        // Runs on the ZooKeeper event thread: hand the release
                        // to the owning thread.
                        emit("REVOKE_REQUESTED " + id + " " + micros());
                        thread.execute(() -> {
                            try {
                                if (lock == m && m.isOwnedByCurrentThread()) {
                                    release();
                                }
                            } catch (Throwable t) {
                                emit("ERROR " + id + " " + String.valueOf(t).replace('\n', ' '));
                            }
                        });
                    });
                    acquired(m, acquire(m, cmd, 3), m::node);
                }
                case "MULTI_ACQUIRE" -> {
                    List<InterProcessLock> members = new ArrayList<>();
                    for (String path : cmd[2].split(",")) {
                        members.add(new NodeMutex(client(), path));
                    }
                    InterProcessMultiLock m = new InterProcessMultiLock(members);
                    acquired(m, acquire(m, cmd, 3), ((NodeMutex) members.get(members.size() - 1))::node);
                }
                case "READ_ACQUIRE" -> {
                    NodeRead m = new NodeRead(client(), cmd[2]);
                    acquired(m, acquire(m, cmd, 3), m::node);
                }
                case "WRITE_ACQUIRE" -> {
                    NodeWrite m = new NodeWrite(client(), cmd[2]);
                    lockPath = cmd[2];
                    acquired(m, acquire(m, cmd, 3), m::node);
                }
                case "DOWNGRADE" -> {
                    // Holding write: take read on the same lock, then let go of write.
                    if (!(lock instanceof NodeWrite w)) {
                        throw new IllegalStateException("DOWNGRADE needs a held write lock");
                    }
                    NodeRead r = new NodeRead(client(), lockPath, w);
                    r.acquire();
                    lock = r;
                    w.release();
                    emit("DOWNGRADED " + id + " " + r.node() + " " + micros());
                }
                case "SEMMUTEX_ACQUIRE" -> {
                    InterProcessSemaphoreMutex m = new InterProcessSemaphoreMutex(client(), cmd[2]);
                    acquired(m, acquire(m, cmd, 3), () -> leasePath(cmd[2], semaphoreMutexNode(m)));
                }
                case "SEM_ACQUIRE" -> semAcquire(
                        new InterProcessSemaphoreV2(client(), cmd[2], Integer.parseInt(cmd[3])), cmd);
                case "SEMCOUNT_ACQUIRE" -> {
                    if (count == null) {
                        count = new SharedCount(client(), cmd[3], 1);
                        count.start();
                    }
                    semAcquire(new InterProcessSemaphoreV2(client(), cmd[2], count), cmd);
                }
                case "COUNT_GET", "COUNT_SET" -> {
                    boolean set = cmd[0].equals("COUNT_SET");
                    try (SharedCount c = new SharedCount(client(), cmd[2], set ? Integer.parseInt(cmd[3]) : 0)) {
                        c.start();
                        if (set) {
                            c.setCount(Integer.parseInt(cmd[3]));
                        }
                        emit("COUNT " + id + " " + c.getCount());
                    }
                }
                case "MUTEX_RELEASE", "READ_RELEASE", "WRITE_RELEASE", "REVOCABLE_RELEASE", "SEM_RETURN",
                        "SEMMUTEX_RELEASE" -> release();
                case "REVOKE" -> {
                    Revoker.attemptRevoke(admin, cmd[2]);
                    emit("REVOKE_SENT " + id);
                }
                case "GZIP_SET" -> {
                    admin.setData().compressed().forPath(cmd[2], java.util.HexFormat.of().parseHex(cmd[3].substring(1)));
                    emit("SET " + id);
                }
                case "GZIP_GET" -> {
                    byte[] data = admin.getData().decompressed().forPath(cmd[2]);
                    emit("DATA " + id + " x" + java.util.HexFormat.of().formatHex(data));
                }
                case "PARTICIPANTS" -> {
                    Collection<String> nodes = switch (cmd[2]) {
                        case "mutex" -> new InterProcessMutex(admin, cmd[3]).getParticipantNodes();
                        case "read" -> new InterProcessReadWriteLock(admin, cmd[3]).readLock().getParticipantNodes();
                        case "write" -> new InterProcessReadWriteLock(admin, cmd[3]).writeLock().getParticipantNodes();
                        case "semaphore" -> new InterProcessSemaphoreV2(admin, cmd[3], 1).getParticipantNodes();
                        default -> throw new IllegalArgumentException("unknown participants kind " + cmd[2]);
                    };
                    StringBuilder line = new StringBuilder("NODES ").append(id).append(' ').append(nodes.size());
                    for (String node : nodes) {
                        line.append(' ').append(node);
                    }
                    emit(line.toString());
                }
                case "SELECTOR_START" -> {
                    long hold = Long.parseLong(cmd[4]);
                    if (cmd.length > 5 && cmd[5].equals("session")) {
                        if (client != null) {
                            throw new IllegalStateException("the session policy needs a fresh client");
                        }
                        client = newClient(connectString, true);
                        emit("POLICY " + id + " " + client.getConnectionStateErrorPolicy().getClass().getSimpleName());
                    }
                    LeaderSelector s = new LeaderSelector(client(), cmd[2], new LeaderSelectorListenerAdapter() {
                        @Override
                        public void takeLeadership(CuratorFramework c) throws Exception {
                            leading = true;
                            emit("LEADER " + id + " " + micros());
                            try {
                                Thread.sleep(hold);
                            } finally {
                                emit("RESIGN " + id + " " + micros());
                                leading = false;
                            }
                        }
                    });
                    s.setId(cmd[3]);
                    s.autoRequeue();
                    selector = s;
                    s.start();
                }
                case "SELECTOR_STOP" -> {
                    LeaderSelector s = selector;
                    selector = null;
                    s.close();
                    // close() interrupts a term without waiting for it to end.
                    while (leading) {
                        Thread.sleep(5);
                    }
                    emit("STOPPED " + id);
                }
                case "LATCH_START" -> {
                    long hold = Long.parseLong(cmd[4]);
                    int terms = Integer.parseInt(cmd[5]);
                    for (int i = 0; i < terms; i++) {
                        LeaderLatch latch = new LeaderLatch(client(), cmd[2], cmd[3]);
                        latch.start();
                        latch.await();
                        emit("LEADER " + id + " " + micros());
                        Thread.sleep(hold);
                        emit("RESIGN " + id + " " + micros());
                        latch.close();
                    }
                    emit("STOPPED " + id);
                }
                case "LEADER_OF" -> {
                    Participant p = electionOf(cmd[2], cmd[3]).getLeader();
                    String leader = p.getId().isEmpty() ? "-" : p.getId();
                    emit("LEADER_IS " + id + " " + leader + " " + p.isLeader());
                }
                case "ELECTORATE" -> {
                    Collection<Participant> all = electionOf(cmd[2], cmd[3]).getParticipants();
                    StringBuilder line = new StringBuilder("IDS ").append(id).append(' ').append(all.size());
                    for (Participant p : all) {
                        line.append(' ').append(p.getId()).append(':').append(p.isLeader());
                    }
                    emit(line.toString());
                }
                case "CLOSE" -> {
                    if (selector != null) {
                        selector.close();
                        selector = null;
                    }
                    if (count != null) {
                        count.close();
                        count = null;
                    }
                    if (client != null) {
                        client.close();
                        client = null;
                    }
                    emit("CLOSED " + id);
                }
                default -> throw new IllegalArgumentException("unknown command " + cmd[0]);
            }
        }

        /** HOLD_UNTIL_TOLD: work under the mutex until the connection listener says stop. */
        private void holdUntilTold(String cs, String path, long workMs, long maxMs) throws Exception {
            CuratorFramework own = newClient(cs);
            try {
                AtomicReference<String> told = new AtomicReference<>();
                AtomicLong toldAt = new AtomicLong();
                own.getConnectionStateListenable().addListener((c, state) -> {
                    if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
                        long now = micros();
                        if (told.compareAndSet(null, state.name())) {
                            toldAt.set(now);
                        }
                    }
                });
                NodeMutex m = new NodeMutex(own, path);
                m.acquire();
                emit("ACQUIRED " + id + " " + m.node() + " " + micros());
                long end = System.nanoTime() + maxMs * 1_000_000L;
                while (told.get() == null && System.nanoTime() < end) {
                    emit("WORK " + id + " " + micros());
                    Thread.sleep(workMs);
                }
                String state = told.get();
                emit("TOLD " + id + " " + (state == null ? "NONE" : state) + " "
                        + (state == null ? micros() : toldAt.get()));
                try {
                    m.release();
                } catch (Exception e) {
                    // Best effort: the session may be gone.
                }
            } finally {
                own.close();
            }
            emit("DONE " + id);
        }

        /** One lease of {@code sem} on path cmd[2], timed by cmd[4] if given. */
        private void semAcquire(InterProcessSemaphoreV2 sem, String[] cmd) throws Exception {
            Lease l = cmd.length > 4 ? sem.acquire(Long.parseLong(cmd[4]), TimeUnit.MILLISECONDS) : sem.acquire();
            long now = micros();
            if (l == null) {
                emit("TIMEOUT " + id + " " + now);
            } else {
                lease = l;
                emit("ACQUIRED " + id + " " + leasePath(cmd[2], l.getNodeName()) + " " + now);
            }
        }

        private static boolean acquire(InterProcessLock m, String[] cmd, int timeoutArg) throws Exception {
            if (cmd.length > timeoutArg) {
                return m.acquire(Long.parseLong(cmd[timeoutArg]), TimeUnit.MILLISECONDS);
            }
            m.acquire();
            return true;
        }

        private void acquired(InterProcessLock m, boolean ok, NodeName node) throws Exception {
            long now = micros();
            if (!ok) {
                emit("TIMEOUT " + id + " " + now);
                return;
            }
            lock = m;
            emit("ACQUIRED " + id + " " + node.get() + " " + now);
        }

        private void release() throws Exception {
            long exit = micros();
            if (lock != null) {
                InterProcessLock m = lock;
                lock = null;
                m.release();
            } else if (lease != null) {
                Lease l = lease;
                lease = null;
                l.close();
            } else {
                throw new IllegalStateException("nothing held");
            }
            emit("RELEASED " + id + " " + exit + " " + micros());
        }

        void close() {
            if (selector != null) {
                selector.close();
            }
            thread.shutdownNow();
            if (client != null) {
                client.close();
            }
        }
    }

    /** An unstarted election on path, to read its leader and participants. */
    static Election electionOf(String kind, String path) {
        return switch (kind) {
            case "selector" -> {
                LeaderSelector s = new LeaderSelector(admin, path, new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework c) {}
                });
                yield new Election(s::getLeader, s::getParticipants);
            }
            case "latch" -> {
                LeaderLatch l = new LeaderLatch(admin, path);
                yield new Election(l::getLeader, l::getParticipants);
            }
            default -> throw new IllegalArgumentException("unknown election kind " + kind);
        };
    }

    /** What LEADER_OF and ELECTORATE read of an election. */
    record Election(Read<Participant> leader, Read<Collection<Participant>> participants) {
        Participant getLeader() throws Exception {
            return leader.get();
        }

        Collection<Participant> getParticipants() throws Exception {
            return participants.get();
        }
    }

    interface Read<T> {
        T get() throws Exception;
    }

    interface NodeName {
        String get() throws Exception;
    }

    /** Lease.getNodeName() is the bare child name in 5.4.0: make it a full path. */
    static String leasePath(String base, String name) {
        return name.startsWith("/") || name.equals("-") ? name : ZKPaths.makePath(base, "leases", name);
    }

    /** InterProcessSemaphoreMutex keeps its lease private; read it for the report only. */
    static String semaphoreMutexNode(InterProcessSemaphoreMutex m) {
        try {
            Field f = InterProcessSemaphoreMutex.class.getDeclaredField("lease");
            f.setAccessible(true);
            Lease l = (Lease) f.get(m);
            return l == null ? "-" : l.getNodeName();
        } catch (ReflectiveOperationException | RuntimeException e) {
            return "-";
        }
    }

    public static void main(String[] args) throws Exception {
        // The protocol owns fd 1; anything a library prints goes to stderr.
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        emit("READY _");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split("\\s+");
            if (cmd.length == 0 || cmd[0].isEmpty()) {
                continue;
            }
            if (cmd[0].equals("QUIT")) {
                break;
            }
            if (cmd[0].equals("CONNECT")) {
                try {
                    connectString = cmd[1];
                    sessionTimeoutMs = Integer.parseInt(cmd[2]);
                    namespace = cmd.length > 3 ? cmd[3] : null;
                    if (admin == null) {
                        admin = newClient();
                    }
                    emit("CONNECTED _");
                } catch (Throwable t) {
                    emit("ERROR _ " + String.valueOf(t).replace('\n', ' '));
                }
                continue;
            }
            if (cmd.length < 2) {
                emit("ERROR _ missing id in: " + line);
                continue;
            }
            CONTENDERS.computeIfAbsent(cmd[1], Contender::new).submit(cmd);
        }
        List<Contender> all = new ArrayList<>(CONTENDERS.values());
        for (Contender c : all) {
            c.close();
        }
        if (admin != null) {
            admin.close();
        }
        emit("BYE _");
        System.exit(0);
    }
}

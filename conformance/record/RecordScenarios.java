import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZKUtil;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * Records the lock scenarios of conformance/traces (see its README) with the
 * Curator on the classpath, through conformance/record/zkproxy.py. Run by
 * record.sh; arguments are scenario names (none: all).
 *
 * Environment: ZK_PORT (the server), PROXY_PORTS (A,B,C), CONTROL_PORT,
 * OUT (the scenario folders go there), CURATOR_VERSION, ZK_VERSION.
 */
public final class RecordScenarios {
    static int zkPort;
    static int[] ports;
    static String out;
    static String curatorVersion;
    static String zkVersion;
    static ZooKeeper admin;
    static BufferedReader controlIn;
    static PrintWriter controlOut;

    static final List<String> ALL = List.of("mutex-uncontended", "mutex-contended", "mutex-timeout",
            "semaphore-mutex", "semaphore-v2", "rwlock", "multilock", "revocation", "mutex-reconnect",
            "session-expiry", "session-expiry-server");

    public static void main(String[] args) throws Exception {
        zkPort = Integer.parseInt(env("ZK_PORT", "21830"));
        ports = Arrays.stream(env("PROXY_PORTS", "21831,21832,21833").split(",")).mapToInt(Integer::parseInt).toArray();
        out = env("OUT", "traces");
        curatorVersion = env("CURATOR_VERSION", "unknown");
        zkVersion = env("ZK_VERSION", "unknown");
        CountDownLatch up = new CountDownLatch(1);
        admin = new ZooKeeper("127.0.0.1:" + zkPort, 10000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                up.countDown();
            }
        });
        if (!up.await(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("admin handle did not connect");
        }
        Socket control = new Socket("127.0.0.1", Integer.parseInt(env("CONTROL_PORT", "21839")));
        controlIn = new BufferedReader(new InputStreamReader(control.getInputStream(), StandardCharsets.UTF_8));
        controlOut = new PrintWriter(control.getOutputStream(), true, StandardCharsets.UTF_8);
        try {
            admin.create("/traces", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException ignore) {
            // made by an earlier run
        }
        List<String> names = args.length == 0 ? ALL : Arrays.asList(args);
        for (String name : names) {
            if (!ALL.contains(name)) {
                throw new IllegalArgumentException("unknown scenario " + name);
            }
            System.out.println("recording " + name);
            new Scenario(name).run();
        }
        admin.close();
        control.close();
    }

    static String env(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? dflt : v;
    }

    static String control(String line) throws Exception {
        controlOut.println(line);
        String reply = controlIn.readLine();
        if (reply == null || !reply.startsWith("ok")) {
            throw new IllegalStateException("proxy: " + line + " -> " + reply);
        }
        return reply;
    }

    static String fourLetter(String word) throws Exception {
        try (Socket s = new Socket("127.0.0.1", zkPort)) {
            OutputStream o = s.getOutputStream();
            o.write(word.getBytes(StandardCharsets.US_ASCII));
            o.flush();
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    static List<String> children(String path) throws Exception {
        try {
            List<String> kids = new ArrayList<>(admin.getChildren(path, false));
            kids.sort((a, b) -> seqOf(a).compareTo(seqOf(b)));
            return kids;
        } catch (KeeperException.NoNodeException e) {
            return List.of();
        }
    }

    static String seqOf(String name) {
        return name.length() >= 10 && name.substring(name.length() - 10).chars().allMatch(Character::isDigit)
                ? name.substring(name.length() - 10) : name;
    }

    static String json(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Boolean || v instanceof Number) {
            return v.toString();
        }
        if (v instanceof Map<?, ?> m) {
            return m.entrySet().stream().map(e -> json(e.getKey().toString()) + ":" + json(e.getValue()))
                    .collect(Collectors.joining(",", "{", "}"));
        }
        if (v instanceof List<?> l) {
            return l.stream().map(RecordScenarios::json).collect(Collectors.joining(",", "[", "]"));
        }
        StringBuilder sb = new StringBuilder("\"");
        for (char c : v.toString().toCharArray()) {
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                default -> sb.append(c < 0x20 ? String.format("\\u%04x", (int) c) : String.valueOf(c));
            }
        }
        return sb.append('"').toString();
    }

    /** One client: its proxy port, its session, its own thread (Curator locks belong to threads). */
    static final class Client {
        final String name;
        final int port;
        final int timeoutMs;
        final CuratorFramework fw;
        final ExecutorService thread;
        final List<String> states = new ArrayList<>();
        final List<String> sessions = new ArrayList<>();

        Client(Scenario sc, String name, int port, int timeoutMs) {
            this.name = name;
            this.port = port;
            this.timeoutMs = timeoutMs;
            int connectMs = timeoutMs == 10000 ? 5000 : timeoutMs;
            this.fw = CuratorFrameworkFactory.builder().connectString("127.0.0.1:" + port)
                    .sessionTimeoutMs(timeoutMs).connectionTimeoutMs(connectMs)
                    .retryPolicy(new ExponentialBackoffRetry(100, 3)).build();
            this.thread = Executors.newSingleThreadExecutor(r -> new Thread(r, "client-" + name));
            fw.getConnectionStateListenable().addListener((c, state) -> {
                String session = null;
                if (state.isConnected()) {
                    session = sessionId();
                    synchronized (sessions) {
                        if (!sessions.contains(session)) {
                            sessions.add(session);
                        }
                    }
                }
                synchronized (states) {
                    states.add(state.name());
                    states.notifyAll();
                }
                sc.step(name, "event", "connection state " + state.name(), session == null ? null : "session " + session);
            });
        }

        String sessionId() {
            try {
                return "0x" + Long.toHexString(fw.getZookeeperClient().getZooKeeper().getSessionId());
            } catch (Exception e) {
                return "unknown";
            }
        }

        void awaitState(String state, long ms) throws InterruptedException {
            long end = System.currentTimeMillis() + ms;
            synchronized (states) {
                while (!states.contains(state)) {
                    long left = end - System.currentTimeMillis();
                    if (left <= 0) {
                        throw new IllegalStateException(name + ": no " + state + " within " + ms + " ms");
                    }
                    states.wait(left);
                }
            }
        }
    }

    /** One recorded scenario: its clients, steps and notes; writes summary.json. */
    static final class Scenario {
        final String name;
        final String base;
        final long t0Nanos = System.nanoTime();
        final long t0Ms = System.currentTimeMillis();
        final List<Map<String, Object>> steps = new ArrayList<>();
        final List<String> notes = new ArrayList<>();
        final Map<String, Client> clients = new LinkedHashMap<>();
        String description = "";

        Scenario(String name) {
            this.name = name;
            this.base = "/traces/" + name;
        }

        double tMs() {
            return Math.round((System.nanoTime() - t0Nanos) / 10_000.0) / 100.0;
        }

        synchronized Map<String, Object> step(String client, String kind, String action, Object result) {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("seq", steps.size() + 1);
            s.put("t_ms", tMs());
            s.put("client", client);
            s.put("kind", kind);
            s.put("action", action);
            if (!kind.equals("call") || result != null) {
                s.put("result", result);
            }
            steps.add(s);
            return s;
        }

        /** Runs {@code body} on the client's thread as a recorded call. */
        Future<Object> call(Client c, String action, Callable<Object> body) {
            return c.thread.submit(() -> {
                Map<String, Object> s = step(c.name, "call", action, null);
                Object result = body.call();
                synchronized (this) {
                    s.put("t_return_ms", tMs());
                    s.put("result", result);
                }
                return result;
            });
        }

        /** A recorded call of {@code c} made from this thread (its own thread is blocked in an acquire). */
        Object inline(Client c, String action, Callable<Object> body) throws Exception {
            Map<String, Object> s = step(c.name, "call", action, null);
            Object result = body.call();
            synchronized (this) {
                s.put("t_return_ms", tMs());
                s.put("result", result);
            }
            return result;
        }

        Object done(Future<Object> f) throws Exception {
            return f.get(60, TimeUnit.SECONDS);
        }

        Client client(String name, int timeoutMs) throws Exception {
            int port = ports["ABC".indexOf(name)];
            Client c = new Client(this, name, port, timeoutMs);
            clients.put(name, c);
            done(call(c, "CuratorFramework.start + blockUntilConnected", () -> {
                c.fw.start();
                if (!c.fw.blockUntilConnected(10, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(c.name + " did not connect");
                }
                return "session " + c.sessionId();
            }));
            return c;
        }

        void settle() throws InterruptedException {
            Thread.sleep(300);
        }

        /**
         * Waits until {@code parent} has {@code n} children and, if {@code dataWatch}, the
         * server lists a data watch of {@code c}'s session (wchp); then 300 ms more.
         */
        void blocked(Client c, String parent, int n, boolean dataWatch, String what) throws Exception {
            long end = System.currentTimeMillis() + 10_000;
            while (children(parent).size() < n) {
                if (System.currentTimeMillis() > end) {
                    throw new IllegalStateException("no " + n + " children under " + parent);
                }
                Thread.sleep(10);
            }
            String session = c.sessionId();
            while (dataWatch && !fourLetter("wchp").contains(session)) {
                if (System.currentTimeMillis() > end) {
                    throw new IllegalStateException("no watch of " + c.name + " in wchp");
                }
                Thread.sleep(10);
            }
            Thread.sleep(300);
            step(c.name, "observed", "(" + what + "children of " + parent + " = " + children(parent) + ")", null);
        }

        void control(String what, String command) throws Exception {
            String reply = RecordScenarios.control(command);
            step("proxy", "control", what, reply);
        }

        void run() throws Exception {
            Path dir = Paths.get(out, name);
            if (Files.isDirectory(dir)) {
                try (var files = Files.list(dir)) {
                    for (Path p : files.toList()) {
                        Files.delete(p);
                    }
                }
            }
            for (int i = 0; i < ports.length; i++) {
                RecordScenarios.control("label " + ports[i] + " " + name + "/" + "ABC".charAt(i));
            }
            try {
                ZKUtil.deleteRecursive(admin, base);
            } catch (KeeperException.NoNodeException ignore) {
                // a fresh server
            }
            switch (name) {
                case "mutex-uncontended" -> mutexUncontended();
                case "mutex-contended" -> mutexContended();
                case "mutex-timeout" -> mutexTimeout();
                case "semaphore-mutex" -> semaphoreMutex();
                case "semaphore-v2" -> semaphoreV2();
                case "rwlock" -> rwlock();
                case "multilock" -> multilock();
                case "revocation" -> revocation();
                case "mutex-reconnect" -> mutexReconnect();
                case "session-expiry" -> sessionExpiry(false);
                case "session-expiry-server" -> sessionExpiry(true);
                default -> throw new IllegalArgumentException(name);
            }
            notes.add("server-side children of " + base + " at the end: " + children(base));
            for (Client c : clients.values()) {
                c.thread.shutdown();
            }
            RecordScenarios.control("wait-idle 10");
            write(dir);
        }

        void close() throws Exception {
            for (Client c : clients.values()) {
                done(call(c, "CuratorFramework.close", () -> {
                    c.fw.close();
                    return null;
                }));
            }
        }

        void write(Path dir) throws Exception {
            Map<String, Object> cs = new LinkedHashMap<>();
            for (Client c : clients.values()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("connect", "127.0.0.1:" + c.port + " (proxy)");
                m.put("session_timeout_ms", c.timeoutMs);
                m.put("sessions", new ArrayList<>(c.sessions));
                m.put("connection_states", new ArrayList<>(c.states));
                cs.put(c.name, m);
            }
            List<String> files;
            try (var list = Files.list(dir)) {
                files = list.map(p -> p.getFileName().toString()).filter(f -> f.endsWith(".jsonl")).sorted().toList();
            }
            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("scenario", name);
            summary.put("description", description);
            summary.put("curator", curatorVersion);
            summary.put("zookeeper", zkVersion);
            summary.put("base_path", base);
            summary.put("t0_unix_ms", t0Ms);
            summary.put("clients", cs);
            summary.put("steps", steps);
            summary.put("notes", notes);
            summary.put("files", files);
            StringBuilder sb = new StringBuilder("{\n");
            int i = 0;
            for (Map.Entry<String, Object> e : summary.entrySet()) {
                sb.append("  ").append(json(e.getKey())).append(": ");
                if (e.getKey().equals("steps") || e.getKey().equals("clients")) {
                    boolean isSteps = e.getKey().equals("steps");
                    sb.append(isSteps ? "[\n" : "{\n");
                    List<String> rows = isSteps
                            ? steps.stream().map(s -> "    " + json(s)).toList()
                            : cs.entrySet().stream().map(c -> "    " + json(c.getKey()) + ": " + json(c.getValue())).toList();
                    sb.append(String.join(",\n", rows)).append(isSteps ? "\n  ]" : "\n  }");
                } else {
                    sb.append(json(e.getValue()));
                }
                sb.append(++i < summary.size() ? ",\n" : "\n");
            }
            Files.writeString(dir.resolve("summary.json"), sb.append("}\n").toString());
        }

        // ---- the scenarios ----------------------------------------------------------------------

        void mutexUncontended() throws Exception {
            description = "InterProcessMutex, one client: acquire, acquire again (reentrant), release, release.";
            Client a = client("A", 10000);
            settle();
            InterProcessMutex m = new InterProcessMutex(a.fw, base);
            done(call(a, "acquire", () -> { m.acquire(); return true; }));
            notes.add("A lock node after first acquire: " + children(base));
            done(call(a, "acquire (reentrant)", () -> { m.acquire(); return true; }));
            done(call(a, "release (inner)", () -> { m.release(); return null; }));
            done(call(a, "release (outer)", () -> { m.release(); return null; }));
            notes.add("children of base after release: " + children(base));
            close();
        }

        void mutexContended() throws Exception {
            description = "InterProcessMutex: A acquires; B acquire() blocks; A releases; B acquires and releases.";
            Client a = client("A", 10000);
            Client b = client("B", 10000);
            settle();
            InterProcessMutex ma = new InterProcessMutex(a.fw, base);
            InterProcessMutex mb = new InterProcessMutex(b.fw, base);
            done(call(a, "acquire", () -> { ma.acquire(); return true; }));
            Future<Object> bAcq = call(b, "acquire", () -> { mb.acquire(); return true; });
            blocked(b, base, 2, true, "blocked, watching; ");
            done(call(a, "release", () -> { ma.release(); return null; }));
            done(bAcq);
            done(call(b, "release", () -> { mb.release(); return null; }));
            close();
        }

        void mutexTimeout() throws Exception {
            description = "InterProcessMutex: A holds; B acquire(300 ms) returns false (and deletes its node); A releases.";
            Client a = client("A", 10000);
            Client b = client("B", 10000);
            settle();
            InterProcessMutex ma = new InterProcessMutex(a.fw, base);
            InterProcessMutex mb = new InterProcessMutex(b.fw, base);
            done(call(a, "acquire", () -> { ma.acquire(); return true; }));
            done(call(b, "acquire(300 ms)", () -> mb.acquire(300, TimeUnit.MILLISECONDS)));
            notes.add("children of base after B's timeout: " + children(base));
            done(call(a, "release", () -> { ma.release(); return null; }));
            close();
        }

        void semaphoreMutex() throws Exception {
            description = "InterProcessSemaphoreMutex (non-reentrant, built on InterProcessSemaphoreV2 with 1 lease):"
                    + " A acquires, B waits, A releases, B gets it and releases.";
            Client a = client("A", 10000);
            Client b = client("B", 10000);
            settle();
            InterProcessSemaphoreMutex ma = new InterProcessSemaphoreMutex(a.fw, base);
            InterProcessSemaphoreMutex mb = new InterProcessSemaphoreMutex(b.fw, base);
            done(call(a, "acquire", () -> { ma.acquire(); return true; }));
            notes.add("after A acquired: locks=" + children(base + "/locks") + " leases=" + children(base + "/leases"));
            Future<Object> bAcq = call(b, "acquire", () -> { mb.acquire(); return true; });
            blocked(b, base + "/leases", 2, false, "blocked, watching; ");
            notes.add("while B waits: locks=" + children(base + "/locks") + " leases=" + children(base + "/leases"));
            done(call(a, "release", () -> { ma.release(); return null; }));
            done(bAcq);
            done(call(b, "release", () -> { mb.release(); return null; }));
            close();
        }

        void semaphoreV2() throws Exception {
            description = "InterProcessSemaphoreV2 maxLeases=2: A and B take leases, C waits; A returns its lease,"
                    + " C gets one; B and C return theirs.";
            Client[] cs = {client("A", 10000), client("B", 10000), client("C", 10000)};
            settle();
            Lease[] leases = new Lease[3];
            for (int i = 0; i < 2; i++) {
                InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(cs[i].fw, base, 2);
                int k = i;
                done(call(cs[i], "acquire", () -> { leases[k] = s.acquire(); return leases[k].getNodeName(); }));
            }
            InterProcessSemaphoreV2 sc = new InterProcessSemaphoreV2(cs[2].fw, base, 2);
            Future<Object> cAcq = call(cs[2], "acquire", () -> { leases[2] = sc.acquire(); return leases[2].getNodeName(); });
            blocked(cs[2], base + "/leases", 3, false, "blocked, watching; ");
            notes.add("while C waits: locks=" + children(base + "/locks") + " leases=" + children(base + "/leases"));
            done(call(cs[0], "returnLease", () -> { leases[0].close(); return null; }));
            done(cAcq);
            done(call(cs[1], "returnLease", () -> { leases[1].close(); return null; }));
            done(call(cs[2], "returnLease", () -> { leases[2].close(); return null; }));
            close();
        }

        void rwlock() throws Exception {
            description = "InterProcessReadWriteLock: A read, B read (shared), C write waits; A releases, B releases,"
                    + " C gets write; C takes read while holding write (downgrade), releases write, then read.";
            Client a = client("A", 10000);
            Client b = client("B", 10000);
            Client c = client("C", 10000);
            settle();
            InterProcessReadWriteLock la = new InterProcessReadWriteLock(a.fw, base);
            InterProcessReadWriteLock lb = new InterProcessReadWriteLock(b.fw, base);
            InterProcessReadWriteLock lc = new InterProcessReadWriteLock(c.fw, base);
            done(call(a, "readLock.acquire", () -> { la.readLock().acquire(); return true; }));
            done(call(b, "readLock.acquire", () -> { lb.readLock().acquire(); return true; }));
            Future<Object> cAcq = call(c, "writeLock.acquire", () -> { lc.writeLock().acquire(); return true; });
            blocked(c, base, 3, true, "blocked, watching; ");
            done(call(a, "readLock.release", () -> { la.readLock().release(); return null; }));
            Thread.sleep(300);
            notes.add("after A released: C still waiting = " + !cAcq.isDone() + ", children=" + children(base));
            done(call(b, "readLock.release", () -> { lb.readLock().release(); return null; }));
            done(cAcq);
            done(call(c, "readLock.acquire (holding write)", () -> { lc.readLock().acquire(); return true; }));
            notes.add("C holds write+read: children=" + children(base));
            done(call(c, "writeLock.release", () -> { lc.writeLock().release(); return null; }));
            done(call(c, "readLock.release", () -> { lc.readLock().release(); return null; }));
            close();
        }

        void multilock() throws Exception {
            description = "InterProcessMultiLock over two InterProcessMutex paths (BASE/lock-1, BASE/lock-2): acquire, release.";
            Client a = client("A", 10000);
            settle();
            InterProcessMultiLock m = new InterProcessMultiLock(a.fw, List.of(base + "/lock-1", base + "/lock-2"));
            done(call(a, "acquire", () -> { m.acquire(); return true; }));
            notes.add("held: lock-1=" + children(base + "/lock-1") + " lock-2=" + children(base + "/lock-2"));
            done(call(a, "release", () -> { m.release(); return null; }));
            close();
        }

        void revocation() throws Exception {
            description = "InterProcessMutex with makeRevocable: A holds; B's acquire() blocks; B calls getParticipantNodes"
                    + " and Revoker.attemptRevoke on A's node; A's RevocationListener releases (on A's thread);"
                    + " B acquires and releases.";
            Client a = client("A", 10000);
            Client b = client("B", 10000);
            settle();
            InterProcessMutex ma = new InterProcessMutex(a.fw, base);
            InterProcessMutex mb = new InterProcessMutex(b.fw, base);
            CountDownLatch released = new CountDownLatch(1);
            ma.makeRevocable(m -> {
                step("A", "event", "RevocationListener.revocationRequested", null);
                call(a, "release (from listener)", () -> { ma.release(); released.countDown(); return null; });
            });
            done(call(a, "acquire (revocable)", () -> { ma.acquire(); return true; }));
            Future<Object> bAcq = call(b, "acquire", () -> { mb.acquire(); return true; });
            blocked(b, base, 2, true, "blocked, watching; ");
            Object nodes = inline(b, "getParticipantNodes", () -> new ArrayList<>(mb.getParticipantNodes()));
            String aNode = base + "/" + children(base).get(0);
            inline(b, "Revoker.attemptRevoke(A's node)", () -> { Revoker.attemptRevoke(b.fw, aNode); return aNode; });
            if (!released.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("A did not release on revocation (participants " + nodes + ")");
            }
            done(bAcq);
            done(call(b, "release", () -> { mb.release(); return null; }));
            close();
        }

        void mutexReconnect() throws Exception {
            description = "InterProcessMutex + connection loss (not session loss): A holds; B acquire() blocks; the proxy"
                    + " drops B's TCP connection once; B's ZooKeeper handle reconnects with the same session id and"
                    + " re-registers its watches (Curator: SUSPENDED then RECONNECTED); A releases; B acquires and releases.";
            Client a = client("A", 10000);
            Client b = client("B", 10000);
            settle();
            InterProcessMutex ma = new InterProcessMutex(a.fw, base);
            InterProcessMutex mb = new InterProcessMutex(b.fw, base);
            done(call(a, "acquire", () -> { ma.acquire(); return true; }));
            Future<Object> bAcq = call(b, "acquire", () -> { mb.acquire(); return true; });
            blocked(b, base, 2, true, "blocked, watching; ");
            control("drop B's connection", "drop " + b.port);
            b.awaitState("RECONNECTED", 20_000);
            blocked(b, base, 2, true, "still blocked after the reconnect; ");
            done(call(a, "release", () -> { ma.release(); return null; }));
            done(bAcq);
            done(call(b, "release", () -> { mb.release(); return null; }));
            close();
        }

        void sessionExpiry(boolean blackhole) throws Exception {
            String how = blackhole
                    ? "blackhole (A's connection stays open, the proxy forwards nothing, new connections refused);"
                    + " A's session timeout 9000 ms; healed right after B acquires, so A reconnects with its old"
                    + " session id and the server reports the expiry."
                    : "cut (A's connection aborted, new connections refused); A's session timeout 2000 ms; Curator's"
                    + " default simulated expiration fires (LOST) at the session timeout, and A opens a new session"
                    + " when the proxy lets it in.";
            description = "InterProcessMutex + session expiry: A holds; B acquire() blocks; the proxy partitions A from"
                    + " the server; the server expires A's session and deletes its lock node; B acquires. The partition"
                    + " heals; A calls release() on its lost lock (no exception); B releases. Partition = " + how;
            Client a = client("A", blackhole ? 9000 : 2000);
            Client b = client("B", 10000);
            settle();
            InterProcessMutex ma = new InterProcessMutex(a.fw, base);
            InterProcessMutex mb = new InterProcessMutex(b.fw, base);
            done(call(a, "acquire", () -> { ma.acquire(); return true; }));
            Future<Object> bAcq = call(b, "acquire", () -> { mb.acquire(); return true; });
            blocked(b, base, 2, true, "blocked, watching; ");
            control(blackhole ? "partition A blackhole" : "partition A on",
                    "partition " + a.port + (blackhole ? " blackhole" : " on"));
            if (!blackhole) {
                a.awaitState("LOST", 30_000);
            }
            done(bAcq);
            notes.add("after B acquired: children=" + children(base));
            control("partition A off", "partition " + a.port + " off");
            a.awaitState("RECONNECTED", 30_000);
            done(call(a, "release (after losing the session)", () -> {
                try {
                    ma.release();
                    return "returned normally";
                } catch (Exception e) {
                    return "threw " + e;
                }
            }));
            done(call(b, "release", () -> { mb.release(); return null; }));
            close();
        }
    }
}

// Curator side of scripts/bench-vs-peers.sh: times Curator 5.4.0's lock recipes
// against one ZooKeeper and prints one single-line JSON object on stdout.
//
//   java -cp CLASSES:JARS CuratorBench CONNECT WORKLOAD CYCLES [CLIENTS] [LEASES]
//
// Workloads (each warms up with 200 uncounted cycles first):
//   mutex-uncontended  one session, InterProcessMutex acquire + release, CYCLES times;
//                      latency = one acquire + release cycle
//   mutex-contended    CLIENTS threads (default 8), each with its own session, contend on
//                      one InterProcessMutex until CYCLES acquisitions in total;
//                      cycles_per_sec = acquisitions/s, latency = acquire wait
//   read-lock          one session, InterProcessReadWriteLock.readLock() cycles
//   semaphore          one session, InterProcessSemaphoreV2 with LEASES leases (default 3):
//                      acquire one lease + returnLease, CYCLES times
//   tasks              one session, CLIENTS threads (default 8) each cycling an
//                      InterProcessMutex of its own until CYCLES cycles in all
//   held               one session, CYCLES distinct InterProcessMutexes, each acquired by a
//                      thread of its own (acquire blocks its thread), all held at once, then
//                      released; reports acquire/release times and VmRSS per held lock
//
// Every run works under a fresh /zoolock-bench-curator-<nanos> parent and deletes it at
// the end. Exit status 1 (message on stderr) on any failure, including an acquire that
// does not succeed within 30 s.

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorBench {
    static final int WARMUP = 200;
    static final int SESSION_TIMEOUT_MS = 10_000;
    static final long ACQUIRE_TIMEOUT_S = 30;

    private CuratorBench() {}

    public static void main(String[] args) throws Exception {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        if (args.length < 3 || args.length > 5) {
            System.err.println("usage: CuratorBench CONNECT WORKLOAD CYCLES [CLIENTS] [LEASES]");
            System.err.println("workloads: mutex-uncontended mutex-contended read-lock semaphore");
            System.exit(2);
        }
        String connect = args[0];
        String workload = args[1];
        int cycles = Integer.parseInt(args[2]);
        int clients = args.length > 3 ? Integer.parseInt(args[3]) : 8;
        int leases = args.length > 4 ? Integer.parseInt(args[4]) : 3;
        if (cycles < 1 || clients < 1 || leases < 1) {
            System.err.println("CYCLES, CLIENTS and LEASES must be at least 1");
            System.exit(2);
        }
        try {
            String json;
            switch (workload) {
                case "mutex-uncontended":
                case "read-lock":
                case "semaphore":
                    json = single(connect, workload, cycles, leases);
                    break;
                case "mutex-contended":
                    json = contended(connect, cycles, clients);
                    break;
                case "tasks":
                    json = tasks(connect, cycles, clients);
                    break;
                case "held":
                    json = held(connect, cycles);
                    break;
                default:
                    System.err.println("unknown workload: " + workload);
                    System.exit(2);
                    return;
            }
            System.out.println(json);
            System.out.flush();
            System.exit(0);
        } catch (Throwable t) {
            System.err.println("CuratorBench " + workload + " failed: " + t);
            t.printStackTrace(System.err);
            System.exit(1);
        }
    }

    static CuratorFramework open(String connect) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(SESSION_TIMEOUT_MS)
                .connectionTimeoutMs(SESSION_TIMEOUT_MS)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        c.start();
        if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) {
            c.close();
            throw new IllegalStateException("no connection to " + connect + " within 20 s");
        }
        return c;
    }

    static String freshBase() {
        return "/zoolock-bench-curator-" + System.nanoTime();
    }

    static void removeBase(CuratorFramework c, String base) throws Exception {
        if (c.checkExists().forPath(base) != null) {
            c.delete().deletingChildrenIfNeeded().forPath(base);
        }
    }

    /** One acquire + release, the unit a single-session workload repeats. */
    interface Cycle {
        void run() throws Exception;
    }

    static String single(String connect, String workload, int cycles, int leases) throws Exception {
        CuratorFramework c = open(connect);
        String base = freshBase();
        try {
            Cycle cycle;
            switch (workload) {
                case "mutex-uncontended": {
                    InterProcessMutex m = new InterProcessMutex(c, base + "/mutex");
                    cycle = () -> lockCycle(m);
                    break;
                }
                case "read-lock": {
                    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, base + "/rw");
                    InterProcessLock r = rw.readLock();
                    cycle = () -> lockCycle(r);
                    break;
                }
                default: {
                    InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, base + "/sem", leases);
                    cycle = () -> {
                        Lease l = s.acquire(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS);
                        if (l == null) {
                            throw new IllegalStateException("no lease within " + ACQUIRE_TIMEOUT_S + " s");
                        }
                        s.returnLease(l);
                    };
                    break;
                }
            }
            for (int i = 0; i < WARMUP; i++) {
                cycle.run();
            }
            long[] lat = new long[cycles];
            long start = System.nanoTime();
            for (int i = 0; i < cycles; i++) {
                long t = System.nanoTime();
                cycle.run();
                lat[i] = System.nanoTime() - t;
            }
            long elapsed = System.nanoTime() - start;
            Integer l = workload.equals("semaphore") ? leases : null;
            return json(workload, cycles, elapsed, lat, 1, l);
        } finally {
            try {
                removeBase(c, base);
            } finally {
                c.close();
            }
        }
    }

    static void lockCycle(InterProcessLock lock) throws Exception {
        if (!lock.acquire(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS)) {
            throw new IllegalStateException("lock not acquired within " + ACQUIRE_TIMEOUT_S + " s");
        }
        lock.release();
    }

    static String contended(String connect, int cycles, int clients) throws Exception {
        String base = freshBase();
        String path = base + "/mutex";
        List<CuratorFramework> sessions = new ArrayList<>();
        try {
            List<InterProcessMutex> locks = new ArrayList<>();
            for (int i = 0; i < clients; i++) {
                CuratorFramework c = open(connect);
                sessions.add(c);
                locks.add(new InterProcessMutex(c, path));
            }
            contendedPhase(locks, WARMUP, null);
            long[] lat = new long[cycles];
            long elapsed = contendedPhase(locks, cycles, lat);
            return json("mutex-contended", cycles, elapsed, lat, clients, null);
        } finally {
            try {
                if (!sessions.isEmpty()) {
                    removeBase(sessions.get(0), base);
                }
            } finally {
                for (CuratorFramework c : sessions) {
                    c.close();
                }
            }
        }
    }

    /** K threads on one session, each cycling its own mutex. */
    static String tasks(String connect, int cycles, int k) throws Exception {
        CuratorFramework c = open(connect);
        String base = freshBase();
        try {
            List<InterProcessMutex> locks = new ArrayList<>();
            for (int i = 0; i < k; i++) {
                locks.add(new InterProcessMutex(c, base + "/t" + i));
            }
            contendedPhase(locks, Math.max(WARMUP, k), null);
            long[] lat = new long[cycles];
            long elapsed = contendedPhase(locks, cycles, lat);
            return json("tasks", cycles, elapsed, lat, 1, null).replace("}", ",\"tasks\":" + k + "}");
        } finally {
            try {
                removeBase(c, base);
            } finally {
                c.close();
            }
        }
    }

    /** This JVM's resident set now (VmRSS), in KiB; 0 when unknown. */
    static long rssKib() {
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Paths.get("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.substring(6).trim().split("\\s+")[0]);
                }
            }
        } catch (Exception e) {
            return 0;
        }
        return 0;
    }

    /** N mutexes on one session, a thread each, all held at once, then released. */
    static String held(String connect, int n) throws Exception {
        CuratorFramework c = open(connect);
        String base = freshBase();
        try {
            System.gc();
            long rssBefore = rssKib();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            CountDownLatch acquired = new CountDownLatch(n);
            CountDownLatch go = new CountDownLatch(1);
            long[] lat = new long[n];
            List<Thread> threads = new ArrayList<>();
            long start = System.nanoTime();
            for (int i = 0; i < n; i++) {
                final int idx = i;
                InterProcessMutex m = new InterProcessMutex(c, base + "/l" + i);
                Thread t = new Thread(() -> {
                    boolean got = false;
                    try {
                        long t0 = System.nanoTime();
                        got = m.acquire(ACQUIRE_TIMEOUT_S * 4, TimeUnit.SECONDS);
                        lat[idx] = System.nanoTime() - t0;
                        if (!got) {
                            throw new IllegalStateException("lock not acquired in time");
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                    acquired.countDown();
                    try {
                        go.await();
                        if (got) {
                            m.release();
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                });
                t.setDaemon(true);
                threads.add(t);
                t.start();
            }
            acquired.await();
            long acquire = System.nanoTime() - start;
            long rssHeld = rssKib();
            long releaseStart = System.nanoTime();
            go.countDown();
            for (Thread t : threads) {
                t.join();
            }
            long release = System.nanoTime() - releaseStart;
            Throwable e = failure.get();
            if (e != null) {
                throw new IllegalStateException("holder failed: " + e, e);
            }
            String extra = String.format(Locale.ROOT,
                    ",\"locks\":%d,\"acquire_s\":%.6f,\"release_s\":%.6f,\"locks_per_sec\":%.3f,"
                            + "\"rss_before_kib\":%d,\"rss_held_kib\":%d,\"bytes_per_lock\":%.1f}",
                    n, acquire / 1e9, release / 1e9, n / (acquire / 1e9), rssBefore, rssHeld,
                    Math.max(0, rssHeld - rssBefore) * 1024.0 / n);
            String j = json("held", n, acquire, lat, 1, null);
            return j.substring(0, j.length() - 1) + extra;
        } finally {
            try {
                removeBase(c, base);
            } finally {
                c.close();
            }
        }
    }

    /**
     * Every lock's thread takes tickets until `total` acquisitions are done; returns the
     * phase's wall time in ns and fills `lat` (acquire waits) when it is not null.
     */
    static long contendedPhase(List<InterProcessMutex> locks, int total, long[] lat) throws Exception {
        AtomicInteger tickets = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch ready = new CountDownLatch(locks.size());
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (InterProcessMutex m : locks) {
            Thread t = new Thread(() -> {
                try {
                    ready.countDown();
                    go.await();
                    while (failure.get() == null) {
                        int ticket = tickets.getAndIncrement();
                        if (ticket >= total) {
                            return;
                        }
                        long t0 = System.nanoTime();
                        if (!m.acquire(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("lock not acquired within " + ACQUIRE_TIMEOUT_S + " s");
                        }
                        long waited = System.nanoTime() - t0;
                        m.release();
                        if (lat != null) {
                            lat[ticket] = waited;
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        ready.await();
        long start = System.nanoTime();
        go.countDown();
        for (Thread t : threads) {
            t.join();
        }
        long elapsed = System.nanoTime() - start;
        Throwable e = failure.get();
        if (e != null) {
            throw new IllegalStateException("contender failed: " + e, e);
        }
        return elapsed;
    }

    /** Nearest-rank percentile of ascending `sorted` (ns), in µs. */
    static double percentileUs(long[] sorted, double p) {
        int rank = (int) Math.ceil(p * sorted.length);
        int idx = Math.min(Math.max(rank, 1), sorted.length) - 1;
        return sorted[idx] / 1000.0;
    }

    static String json(String workload, int cycles, long elapsedNs, long[] lat, int clients, Integer leases) {
        long[] sorted = Arrays.copyOf(lat, lat.length);
        Arrays.sort(sorted);
        double seconds = elapsedNs / 1e9;
        return String.format(Locale.ROOT,
                "{\"impl\":\"curator\",\"workload\":\"%s\",\"cycles\":%d,\"seconds\":%.6f,\"cycles_per_sec\":%.1f,"
                        + "\"p50_us\":%.1f,\"p99_us\":%.1f,\"clients\":%d,\"leases\":%s}",
                workload, cycles, seconds, cycles / seconds, percentileUs(sorted, 0.50), percentileUs(sorted, 0.99),
                clients, leases == null ? "null" : leases.toString());
    }
}

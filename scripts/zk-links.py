#!/usr/bin/env python3
"""The server-to-server links of a zk-ensemble.sh ensemble, one TCP proxy per
link, that a test can cut and heal (run by scripts/zk-ensemble.sh; not meant
to be run by hand).

  zk-links.py serve DIR        the proxy daemon of ensemble DIR: reads DIR/links.conf,
                               listens on DIR/links.sock for commands, logs to DIR/links.log
  zk-links.py ctl DIR CMD...   sends one command to the daemon, prints its answer:
      set A B MODE             the links between servers A and B (both directions, quorum
                               and election) to MODE: open, reset or silent; answers
                               "ok N links MODE at US" (US: wall-clock µs when it took hold)
      isolate N MODE           every link of server N to MODE
      heal                     every link open
      show                     one line per link: FROM TO KIND MODE LISTENING CONNECTIONS

A link is one direction of one port: server FROM reaches the quorum (kind q)
or election (kind e) port of server TO at the link's proxy port, which
FROM's zoo.cfg lists as TO's address. links.conf has one line per link:
"FROM TO KIND PROXY_PORT TARGET_PORT REVERSE_PORT" (REVERSE_PORT: the proxy
port of the election link TO -> FROM, or 0).

Modes:
  open    forward both ways. The proxy listens only while its target listens
          (a ZooKeeper quorum port listens only on the leader; a follower
          that dials an absent leader and is accepted, then closed, may not
          retry), so a dial to a target that is not there is refused, as it
          would be without the proxy.
  reset   close every connection of the link and stop listening, so that
          dials are refused.
  silent  forward nothing and close nothing: bytes and closes wait (at most
          one read per direction is taken from the sender's socket) and new
          connections are accepted and hang. On heal, what waited is
          delivered; a connection accepted while silent is then connected to
          its target (or closed if the target no longer listens).

Election links rewrite the first message of a connection. The dialing
server announces its own election address there, and a server with a higher
id closes a connection from a lower id and dials that address back, which
would go around the proxy; the proxy puts the reverse link's proxy address
in its place. (Format, as ZooKeeper 3.8 sends it: long protocol version
-65536 or -65535, long sid, int length, then that many bytes of
"host:port" addresses separated by '|'.)
"""

import os
import select
import socket
import struct
import sys
import threading
import time

MODES = ("open", "reset", "silent")
PROTOCOL_VERSIONS = (-65536, -65535)
TICK = 0.02


def log_to(path):
    lock = threading.Lock()
    f = open(path, "a", buffering=1)

    def log(msg):
        t = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)
        with lock:
            f.write(stamp + " " + msg + "\n")

    return log


def listening_ports():
    """The 127.0.0.1 / 0.0.0.0 ports in LISTEN state (Linux /proc/net/tcp)."""
    ports = set()
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                parts = line.split()
                if parts[3] != "0A":
                    continue
                addr, port = parts[1].split(":")
                if addr in ("0100007F", "00000000"):
                    ports.add(int(port, 16))
    except OSError:
        pass
    return ports


class Conn:
    """One proxied connection: the dialer's socket and the target's."""

    def __init__(self, link, down):
        self.link = link
        self.down = down
        self.up = None
        self.closed = False

    def close(self):
        with self.link.cond:
            if self.closed:
                return
            self.closed = True
            self.link.conns.discard(self)
            self.link.cond.notify_all()
        for s in (self.down, self.up):
            if s is None:
                continue
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass

    def wait_open(self):
        """Waits while the link is silent; True if it is open (and this
        connection not closed)."""
        with self.link.cond:
            while self.link.mode == "silent" and not self.closed:
                self.link.cond.wait()
            return self.link.mode == "open" and not self.closed

    def run(self):
        """The dialer-to-target direction (on the thread that accepted)."""
        link = self.link
        if not self.wait_open():
            return self.close()
        try:
            up = socket.create_connection(("127.0.0.1", link.target), timeout=2)
            up.settimeout(None)
            up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as e:
            link.log("%s: target refused (%s); closing the dialer" % (link.name, e))
            return self.close()
        with link.cond:
            if self.closed:
                up.close()
                return
            self.up = up
        threading.Thread(target=self.pump, args=(up, self.down, False), daemon=True).start()
        self.pump(self.down, up, link.kind == "e")

    def pump(self, src, dst, rewrite):
        pending = b""
        try:
            while True:
                try:
                    data = src.recv(65536)
                except OSError:
                    data = b""
                if rewrite and data:
                    pending += data
                    out = self.rewrite(pending)
                    if out is None:
                        continue
                    data, rewrite, pending = out, False, b""
                # Data or the close both wait while the link is silent.
                if not self.wait_open():
                    break
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        self.close()

    def rewrite(self, buf):
        """The first message with the announced address replaced, or None
        while it is incomplete."""
        if len(buf) < 20:
            return None
        version, sid, length = struct.unpack(">qqi", buf[:20])
        if version not in PROTOCOL_VERSIONS or length <= 0 or length > 4096:
            self.link.log("%s: first message not understood (version %d); forwarded as is" % (self.link.name, version))
            return buf
        if len(buf) < 20 + length:
            return None
        announced = buf[20 : 20 + length].decode("utf-8", "replace")
        ours = "127.0.0.1:%d" % self.link.reverse
        body = ours.encode()
        self.link.log("%s: sid %d announced %s, rewritten to %s" % (self.link.name, sid, announced, ours))
        return struct.pack(">qqi", version, sid, len(body)) + body + buf[20 + length :]


class Link:
    def __init__(self, frm, to, kind, port, target, reverse, log):
        self.frm, self.to, self.kind = frm, to, kind
        self.port, self.target, self.reverse = port, target, reverse
        self.name = "%d->%d %s" % (frm, to, kind)
        self.mode = "open"
        self.cond = threading.Condition()
        self.conns = set()
        self.listener = None
        self.log = log

    def set_mode(self, mode):
        with self.cond:
            if self.mode == mode:
                return
            self.mode = mode
            conns = list(self.conns)
            self.cond.notify_all()
        self.log("%s: %s (%d connections)" % (self.name, mode, len(conns)))
        if mode == "reset":
            for c in conns:
                c.close()
            self.close_listener()

    def close_listener(self):
        if self.listener is not None:
            self.listener.close()
            self.listener = None
            self.log("%s: stopped listening on %d" % (self.name, self.port))

    def want_listen(self, listening):
        if self.mode == "reset":
            return False
        if self.mode == "silent":
            return True
        return self.target in listening

    def refresh(self, listening):
        want = self.want_listen(listening)
        if want and self.listener is None:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", self.port))
                s.listen(16)
            except OSError as e:
                s.close()
                self.log("%s: cannot listen on %d yet: %s" % (self.name, self.port, e))
                return
            s.setblocking(False)
            self.listener = s
            self.log("%s: listening on %d (target %d)" % (self.name, self.port, self.target))
        elif not want and self.listener is not None:
            self.close_listener()

    def accept(self):
        try:
            down, _ = self.listener.accept()
        except OSError:
            return
        down.setblocking(True)
        down.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Conn(self, down)
        with self.cond:
            self.conns.add(conn)
            mode = self.mode
        self.log("%s: accepted a connection (%s)" % (self.name, mode))
        threading.Thread(target=conn.run, daemon=True).start()


def serve(d):
    log = log_to(os.path.join(d, "links.log"))
    links = []
    with open(os.path.join(d, "links.conf")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                frm, to, kind, port, target, reverse = line.split()
                links.append(Link(int(frm), int(to), kind, int(port), int(target), int(reverse), log))
    sock_path = os.path.join(d, "links.sock")
    try:
        os.unlink(sock_path)
    except FileNotFoundError:
        pass
    ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ctl.bind(sock_path)
    ctl.listen(8)
    ctl.setblocking(False)
    log("serving %d links (pid %d)" % (len(links), os.getpid()))
    last_refresh = 0.0
    while True:
        now = time.monotonic()
        if now - last_refresh >= TICK:
            listening = listening_ports()
            for link in links:
                link.refresh(listening)
            last_refresh = now
        by_fd = {link.listener.fileno(): link for link in links if link.listener is not None}
        try:
            ready, _, _ = select.select([ctl] + [link.listener for link in by_fd.values()], [], [], TICK)
        except (OSError, ValueError):
            continue
        for r in ready:
            if r is ctl:
                command(ctl, links, log)
            else:
                link = by_fd.get(r.fileno())
                if link is not None and link.listener is r:
                    link.accept()


def command(ctl, links, log):
    try:
        c, _ = ctl.accept()
    except OSError:
        return
    c.setblocking(True)
    with c:
        words = c.makefile("r").readline().split()
        log("command: %s" % " ".join(words))
        try:
            reply = apply(words, links)
        except (ValueError, IndexError) as e:
            reply = "error: %s" % e
        c.sendall((reply + "\n").encode())


def apply(words, links):
    def check_mode(m):
        if m not in MODES:
            raise ValueError("mode must be one of %s, not %r" % (", ".join(MODES), m))
        return m

    cmd = words[0] if words else ""
    if cmd == "set":
        a, b, mode = int(words[1]), int(words[2]), check_mode(words[3])
        chosen = [k for k in links if {k.frm, k.to} == {a, b}]
    elif cmd == "isolate":
        n, mode = int(words[1]), check_mode(words[2])
        chosen = [k for k in links if n in (k.frm, k.to)]
    elif cmd == "heal":
        mode, chosen = "open", links
    elif cmd == "show":
        return "\n".join(
            "%d %d %s %s %s %d"
            % (k.frm, k.to, k.kind, k.mode, "yes" if k.listener is not None else "no", len(k.conns))
            for k in links
        ) or "no links"
    else:
        raise ValueError("unknown command %r" % cmd)
    if not chosen:
        raise ValueError("no such link")
    # Wall-clock microseconds when the change took hold (tests put the fault there).
    at = int(time.time() * 1e6)
    for k in chosen:
        k.set_mode(mode)
    # Listen (or stop) at once rather than at the next tick.
    listening = listening_ports()
    for k in chosen:
        k.refresh(listening)
    return "ok %d links %s at %d" % (len(chosen), mode, at)


def ctl(d, words):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(os.path.join(d, "links.sock"))
    s.sendall((" ".join(words) + "\n").encode())
    reply = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        reply += chunk
    text = reply.decode().rstrip("\n")
    print(text)
    return 1 if text.startswith("error") else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "ctl":
        sys.exit(ctl(sys.argv[2], sys.argv[3:]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()

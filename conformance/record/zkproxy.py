#!/usr/bin/env python3
"""Recording TCP proxy for ZooKeeper client connections (zk-trace/1).

Listens on one port per client, forwards to the server, and writes every
length-prefixed frame of every connection, both ways, to
OUT/<label>.conn<N>.jsonl (format: conformance/traces/README.md). A control
port takes one command a line, each answered with one line:

  label PORT LABEL          later connections on PORT are written as LABEL
  drop PORT                 abort the open connections on PORT (new ones accepted)
  partition PORT on         abort them and refuse new ones (a cut)
  partition PORT blackhole  refuse new ones; open ones stay up, nothing is forwarded
  partition PORT off        accept again; blackholed connections are aborted
  wait-idle [S]             "ok" once no connection is open, or "busy N" after S s
  status                    one line of JSON

Standard library only.
"""

import argparse
import asyncio
import datetime
import json
import os
import struct
import time

ZK_VERSION = os.environ.get("ZK_TRACE_SERVER", "zookeeper")

# Opcode names as zoolock-wire's OpCode::name spells them.
OPS = {
    1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData", 6: "getACL", 7: "setACL",
    8: "getChildren", 9: "sync", 11: "ping", 12: "getChildren2", 13: "check", 14: "multi",
    15: "create2", 16: "reconfig", 17: "checkWatches", 18: "removeWatches", 19: "createContainer",
    20: "deleteContainer", 21: "createTTL", 22: "multiRead", 100: "auth", 101: "setWatches",
    102: "sasl", 103: "getEphemerals", 104: "getAllChildrenNumber", 105: "setWatches2",
    106: "addWatch", 107: "whoAmI", -10: "createSession", -11: "closeSession",
}
# Requests whose body starts with their path (zoolock-wire's Request::path).
PATH_FIRST = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 15, 17, 18, 19, 20, 21, 103, 104, 106}


def connect_fields(direction, payload):
    """The handshake's fields, decoded (the first frame each way)."""
    try:
        if direction == "c2s":
            proto, last_zxid, timeout, session = struct.unpack(">iqiq", payload[:24])
            rest = payload[24:]
        else:
            proto, timeout, session = struct.unpack(">iiq", payload[:16])
            last_zxid, rest = None, payload[16:]
        (plen,) = struct.unpack(">i", rest[:4])
        rest = rest[4 + max(plen, 0):]
    except struct.error:
        return {}
    fields = {"connect": True, "protocolVersion": proto}
    if last_zxid is not None:
        fields["lastZxidSeen"] = last_zxid
    fields.update({"timeOut": timeout, "sessionId": hex(session), "passwdLen": plen})
    if rest:
        fields["readOnly"] = rest[0] != 0
    return fields


class Conn:
    """One proxied connection and its trace file."""

    def __init__(self, proxy, port, label, n, creader, cwriter):
        self.proxy, self.port, self.label = proxy, port, label
        self.creader, self.cwriter = creader, cwriter
        self.sreader = self.swriter = None
        self.frames = {"c2s": 0, "s2c": 0}
        self.partial = {"c2s": b"", "s2c": b""}
        self.blackholed = False
        self.closed_by = None
        # xid -> op name of the requests in flight, to name replies.
        self.pending = {}
        path = os.path.join(proxy.out, f"{label}.conn{n}.jsonl")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.file = open(path, "w", encoding="utf-8")
        now = time.time()
        self.t0 = time.monotonic()
        header = {
            "format": "zk-trace/1",
            "server": ZK_VERSION,
            "client": label,
            "recorded": datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "conn": n,
            "t0_unix_us": int(now * 1_000_000),
        }
        self.write(header)

    def write(self, obj):
        self.file.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.file.flush()

    def t_us(self):
        return int((time.monotonic() - self.t0) * 1_000_000)

    def frame(self, direction, payload):
        self.frames[direction] += 1
        entry = {"t_us": self.t_us(), "dir": direction, "hex": payload.hex()}
        if self.blackholed:
            entry["dropped"] = True
        if self.frames[direction] == 1:
            entry.update(connect_fields(direction, payload))
        elif direction == "c2s" and len(payload) >= 8:
            xid, opcode = struct.unpack(">ii", payload[:8])
            entry.update({"xid": xid, "op": OPS.get(opcode, str(opcode)), "opcode": opcode})
            self.pending[xid] = OPS.get(opcode, str(opcode))
            if opcode in PATH_FIRST and len(payload) >= 12:
                (n,) = struct.unpack(">i", payload[8:12])
                entry["path"] = payload[12 : 12 + max(n, 0)].decode("utf-8", "replace")
        elif direction == "s2c" and len(payload) >= 16:
            xid, zxid, err = struct.unpack(">iqi", payload[:16])
            reply_to = "watch-event" if xid == -1 else self.pending.pop(xid, None)
            entry.update({"xid": xid, "zxid": zxid, "err": err})
            if reply_to is not None:
                entry["reply_to"] = reply_to
        self.write(entry)

    async def pump(self, reader, writer, direction):
        buf = b""
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    self.note_close("client" if direction == "c2s" else "server")
                    break
                buf += chunk
                while len(buf) >= 4:
                    (length,) = struct.unpack(">i", buf[:4])
                    if length < 0 or len(buf) < 4 + length:
                        break
                    payload, buf = buf[4 : 4 + length], buf[4 + length :]
                    self.frame(direction, payload)
                    if not self.blackholed:
                        writer.write(struct.pack(">i", length) + payload)
                if not self.blackholed:
                    await writer.drain()
        except (ConnectionError, OSError):
            self.note_close("proxy" if self.closed_by is None and self.blackholed else
                            ("client" if direction == "c2s" else "server"))
        finally:
            self.partial[direction] = buf
            self.abort()

    def note_close(self, by):
        if self.closed_by is None:
            self.closed_by = by

    def abort(self):
        for w in (self.cwriter, self.swriter):
            if w is not None:
                try:
                    w.transport.abort()
                except Exception:
                    pass

    def finish(self):
        entry = {
            "t_us": self.t_us(),
            "event": "close",
            "by": self.closed_by or "proxy",
            "frames_c2s": self.frames["c2s"],
            "frames_s2c": self.frames["s2c"],
        }
        for direction in ("c2s", "s2c"):
            if self.partial[direction]:
                entry[f"partial_{direction}"] = self.partial[direction].hex()
        self.write(entry)
        self.file.close()


class Proxy:
    def __init__(self, zk_port, out):
        self.zk_port, self.out = zk_port, out
        self.labels = {}
        self.counts = {}
        self.conns = {}
        self.servers = {}
        self.mode = {}

    async def listen(self, port):
        self.conns.setdefault(port, set())
        self.servers[port] = await asyncio.start_server(
            lambda r, w, p=port: self.accept(p, r, w), "127.0.0.1", port
        )

    async def accept(self, port, creader, cwriter):
        if self.mode.get(port, "off") != "off":
            cwriter.transport.abort()
            return
        label = self.labels.get(port, f"port{port}")
        n = self.counts.get(label, 0) + 1
        self.counts[label] = n
        conn = Conn(self, port, label, n, creader, cwriter)
        try:
            conn.sreader, conn.swriter = await asyncio.open_connection("127.0.0.1", self.zk_port)
        except OSError:
            conn.note_close("proxy")
            conn.abort()
            conn.finish()
            return
        self.conns[port].add(conn)
        try:
            await asyncio.gather(
                conn.pump(creader, conn.swriter, "c2s"), conn.pump(conn.sreader, cwriter, "s2c")
            )
        finally:
            self.conns[port].discard(conn)
            conn.finish()

    def abort_all(self, port):
        conns = list(self.conns.get(port, ()))
        for c in conns:
            c.note_close("proxy")
            c.abort()
        return len(conns)

    async def command(self, line):
        words = line.split()
        if not words:
            return "error empty"
        cmd, args = words[0], words[1:]
        if cmd == "label" and len(args) == 2:
            self.labels[int(args[0])] = args[1]
            return "ok"
        if cmd == "drop" and len(args) == 1:
            return f"ok {self.abort_all(int(args[0]))}"
        if cmd == "partition" and len(args) == 2 and args[1] in ("on", "blackhole", "off"):
            port, mode = int(args[0]), args[1]
            before = self.mode.get(port, "off")
            self.mode[port] = mode
            if mode == "on":
                return f"ok {self.abort_all(port)}"
            if mode == "blackhole":
                conns = list(self.conns.get(port, ()))
                for c in conns:
                    c.blackholed = True
                return f"ok {len(conns)}"
            n = self.abort_all(port) if before == "blackhole" else 0
            return f"ok {n}"
        if cmd == "wait-idle":
            limit = float(args[0]) if args else 10.0
            deadline = time.monotonic() + limit
            while time.monotonic() < deadline:
                if not any(self.conns.values()):
                    return "ok"
                await asyncio.sleep(0.02)
            return f"busy {sum(len(c) for c in self.conns.values())}"
        if cmd == "status":
            return json.dumps(
                {"open": {str(p): len(c) for p, c in self.conns.items()}, "mode": {str(p): m for p, m in self.mode.items()}}
            )
        return f"error unknown command {line.strip()!r}"

    async def control(self, reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                writer.write((await self.command(line.decode()) + "\n").encode())
                await writer.drain()
        finally:
            writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zk-port", type=int, required=True)
    parser.add_argument("--listen", type=int, action="append", required=True)
    parser.add_argument("--control", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    proxy = Proxy(args.zk_port, args.out)
    for port in args.listen:
        await proxy.listen(port)
    control = await asyncio.start_server(proxy.control, "127.0.0.1", args.control)
    print("zkproxy: ready", flush=True)
    async with control:
        await control.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())

"""A lying sentinel on 127.0.0.1 for retry's tests: it names a real master
(argv[2]: its port), and then, by argv[3]:
- "endless-news": every +switch-master subscription gets one message that
  never ends;
- "huge-answer": the master lookup gets an answer that claims 1.5 GB and
  streams it;
- "escapes": the master lookup names a host with terminal escapes in it;
- "escaped-error": the master lookup gets an error with escapes in it.
argv[1]: a file the listening port is written to."""

import socket
import sys
import threading

MASTER_PORT = sys.argv[2].encode()
MODE = sys.argv[3]
CHUNK = b"x" * 65536


def words(f):
    """One command (an array of bulk strings), or None at the end."""
    line = f.readline()
    if not line.startswith(b"*"):
        return None
    out = []
    for _ in range(int(line[1:])):
        n = int(f.readline()[1:])
        out.append(f.read(n + 2)[:-2])
    return out


def endless(conn, head):
    conn.sendall(head)
    while True:
        conn.sendall(CHUNK)


def serve(conn):
    f = conn.makefile("rb")
    try:
        while True:
            cmd = words(f)
            if cmd is None:
                return
            name = cmd[0].upper()
            if name == b"SENTINEL":
                if MODE == "huge-answer":
                    endless(conn, b"*2\r\n$1500000000\r\n")
                if MODE == "escapes":
                    host = b"\x1b]0;owned\x07\x1b[2Jdb\rx"
                    conn.sendall(b"*2\r\n$%d\r\n%s\r\n$1\r\n9\r\n" % (len(host), host))
                    continue
                if MODE == "escaped-error":
                    conn.sendall(b"-ERR \x1b]0;owned\x07\x1b[2Jno\rway\r\n")
                    continue
                conn.sendall(b"*2\r\n$9\r\n127.0.0.1\r\n$%d\r\n%s\r\n" % (len(MASTER_PORT), MASTER_PORT))
            elif name == b"SUBSCRIBE":
                conn.sendall(b"*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n")
                if MODE == "endless-news":
                    endless(conn, b"*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$2000000000\r\nm ")
            elif name == b"PING":
                conn.sendall(b"+PONG\r\n")
            else:
                conn.sendall(b"+OK\r\n")
    except OSError:
        pass
    finally:
        conn.close()


def main():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    with open(sys.argv[1], "w") as out:
        out.write(str(s.getsockname()[1]))
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


main()

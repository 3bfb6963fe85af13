#!/usr/bin/env python3
"""A TCP proxy that the PostgreSQL tests put between an instance and the server, to inject the
faults networks have: added latency, cut connections, and half-open ones (bytes stop flowing, and
neither side is told).

usage: fault-proxy.py TARGET_HOST TARGET_PORT

It listens on a free port of 127.0.0.1 and prints it on its first line. Then it reads commands
on standard input, one a line, and answers each with "ok" once it holds:

  latency MS            from now on, every chunk waits MS milliseconds each way
  blackhole-listeners   the connections that sent LISTEN carry nothing more either way and stay
                        open (half-open); every other connection, and new ones, go on
  blackhole-all         every open connection goes half-open; new ones go on
  cut                   closes every open connection
  partition             every open connection goes half-open, and new ones are refused (closed
                        at once) until "heal"
  heal                  new connections pass again (half-open ones stay so)
  stats                 prints "connections N open M listening L blackholed B" before "ok"
                        (N opened in all; L open, not black-holed, and have sent LISTEN)

It ends when standard input closes.
"""
import asyncio
import sys


class Proxy:
    def __init__(self, host, port):
        self.target = (host, port)
        self.latency = 0.0
        self.connections = []
        self.opened = 0
        self.partitioned = False

    async def serve(self, reader, writer):
        if self.partitioned:
            writer.close()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        connection = {"listens": False, "blackholed": False, "writers": (writer, upstream_writer)}
        self.connections.append(connection)
        self.opened += 1

        async def pump(source, sink, from_client):
            try:
                while True:
                    data = await source.read(65536)
                    if not data:
                        break
                    if from_client and b"LISTEN" in data:
                        connection["listens"] = True
                    if connection["blackholed"]:
                        continue
                    if self.latency:
                        await asyncio.sleep(self.latency)
                    sink.write(data)
                    await sink.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                if not connection["blackholed"]:
                    sink.close()

        await asyncio.gather(pump(reader, upstream_writer, True), pump(upstream_reader, writer, False))
        if connection in self.connections:
            self.connections.remove(connection)

    def command(self, line):
        words = line.split()
        if not words:
            return
        if words[0] == "latency":
            self.latency = float(words[1]) / 1000
        elif words[0] == "blackhole-listeners":
            for connection in self.connections:
                if connection["listens"]:
                    connection["blackholed"] = True
        elif words[0] == "blackhole-all":
            for connection in self.connections:
                connection["blackholed"] = True
        elif words[0] == "partition":
            self.partitioned = True
            for connection in self.connections:
                connection["blackholed"] = True
        elif words[0] == "heal":
            self.partitioned = False
        elif words[0] == "cut":
            for connection in list(self.connections):
                for writer in connection["writers"]:
                    writer.close()
        elif words[0] == "stats":
            blackholed = sum(1 for c in self.connections if c["blackholed"])
            listening = sum(1 for c in self.connections if c["listens"] and not c["blackholed"])
            print(f"connections {self.opened} open {len(self.connections)} listening {listening} blackholed {blackholed}", flush=True)
        else:
            print(f"unknown command: {line.strip()}", flush=True)


async def main():
    proxy = Proxy(sys.argv[1], int(sys.argv[2]))
    server = await asyncio.start_server(proxy.serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = await reader.readline()
        if not line:
            break
        proxy.command(line.decode())
        print("ok", flush=True)
    server.close()


if __name__ == "__main__":
    asyncio.run(main())

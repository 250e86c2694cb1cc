"""Pattern: a streaming response left unclosed when an exception interrupts it.

A chat server streams each answer token by token from a generator, which holds the request's
decoding state (a 256 KiB buffer) until it finishes; its `finally` removes the stream from
`open_streams`, the server's registry (used to cancel streams on shutdown). When the client
disconnects mid-answer, the leaking version's handler catches the error and moves on: the
generator is never closed, its `finally` never runs, and the stream, with its buffer, stays in
the registry for good. The fixed version closes the stream in a `finally` of its own
(`contextlib.closing`), which runs the generator's clean-up whatever happened.

    python3 examples/unclosed_stream/stream_server.py [--fixed] [--steps REQUESTS] [--dumps DIR] [--budget-mib MIB]
"""
import contextlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from support import Example  # noqa: E402


class ClientDisconnected(Exception):
    pass


class StreamServer:
    def __init__(self, fixed):
        self.fixed = fixed
        self.open_streams = {}
        self.disconnects = 0

    def token_stream(self, request_id):
        state = bytearray(256 * 1024)  # the decoding state of this answer
        try:
            for position in range(40):
                state[position] = position & 0xFF
                yield b"token-%d " % position
        finally:
            self.open_streams.pop(request_id, None)

    def send(self, request_id, chunk, position):
        # One client in four goes away in the middle of an answer.
        if request_id % 4 == 0 and position == 10:
            raise ClientDisconnected(request_id)

    def handle(self, request_id):
        stream = self.token_stream(request_id)
        self.open_streams[request_id] = stream
        try:
            if self.fixed:
                with contextlib.closing(stream):
                    for position, chunk in enumerate(stream):
                        self.send(request_id, chunk, position)
            else:
                for position, chunk in enumerate(stream):
                    self.send(request_id, chunk, position)
        except ClientDisconnected:
            self.disconnects += 1  # the leak: the stream is neither finished nor closed


def main():
    example = Example(__doc__.splitlines()[0], default_steps=1200)
    global server
    server = StreamServer(example.fixed)
    example.run(warm_up=lambda: [server.handle(n) for n in range(40)],
                step=lambda n: server.handle(40 + n))


if __name__ == "__main__":
    main()

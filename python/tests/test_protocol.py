"""What the loader says, in one line, to a peer that is not a minato-flink job or breaks the
protocol, and to a saved state that is not its own: no job needed, a socket plays the peer."""

import json
import socket
import struct
import threading

import pytest

from minato_flink import LoaderError, MinatoLoader


def frame(message):
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return struct.pack(">I", len(body)) + body


class Peer:
    """Listens on loopback; to the loader's hello it answers with `replies`, then waits."""

    def __init__(self, *replies):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.replies = replies
        self.done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.server.accept()
        with conn:
            (n,) = struct.unpack(">I", conn.recv(4, socket.MSG_WAITALL))
            conn.recv(n, socket.MSG_WAITALL)  # the hello
            for reply in self.replies:
                conn.sendall(reply)
            self.done.wait(10)

    def close(self):
        self.done.set()
        self.server.close()


WELCOME = frame({"type": "welcome", "samples": 4, "batch": 2, "slots": []})
SHAPE = [2, 1, 2, 2, 2]


def batch_message(**changes):
    m = {"type": "batch", "step": 0, "nbytes": 2 * 8 * 5,
         "image": {"dtype": "float32", "shape": SHAPE}, "label": {"dtype": "uint8", "shape": SHAPE},
         "samples": [[0, 0, 0, "fast"], [0, 1, 1, "slow"]]}
    m.update(changes)
    return frame(m)


def first_batch(peer):
    loader = MinatoLoader(peer.endpoint, rank=0, connect_timeout_s=5, pin_memory=False)
    try:
        return next(iter(loader))
    finally:
        loader.close()
        peer.close()


def test_should_take_a_well_formed_batch_from_the_socket():
    peer = Peer(WELCOME, batch_message(), bytes(range(80)))
    batch = first_batch(peer)
    assert batch.image.shape == tuple(SHAPE) and batch.label.shape == tuple(SHAPE)
    assert batch.samples.tolist() == [[0, 0], [0, 1]] and batch.paths == ["fast", "slow"]
    assert bytes(batch.label.flatten().tolist()) == bytes(range(64, 80))


@pytest.mark.parametrize("reply, message", [
    (b"HTTP/1.1 400 Bad Request\r\n\r\n", "a frame of 1213486160 bytes: not a minato-flink job"),
    (frame(b"<html>"), "a frame that is not JSON"),
    (frame([1, 2]), "a frame without a message type"),
    (frame({"type": "banner"}), "expected a welcome, got 'banner'"),
])
def test_should_stop_in_one_line_at_a_peer_that_is_not_a_minato_job(reply, message):
    with pytest.raises(LoaderError, match=message) as raised:
        first_batch(Peer(reply))
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("changes, message", [
    ({"image": {"dtype": "float64", "shape": SHAPE}}, "cannot read .*KeyError: 'float64'"),
    ({"samples": [[0]]}, "cannot read .*IndexError"),
    ({"label": {"dtype": "uint8", "shape": [2, "x"]}}, "cannot read .*ValueError"),
    ({"slot": 3}, "cannot read .*IndexError"),
    ({"nbytes": 81}, "a batch of 81 bytes whose image and label take 64 \\+ 16"),
])
def test_should_stop_in_one_line_at_a_batch_message_it_cannot_read(changes, message):
    with pytest.raises(LoaderError, match=message) as raised:
        first_batch(Peer(WELCOME, batch_message(**changes)))
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("state, message", [
    ({"version": 99, "rank": 0, "consumed": {}}, "not a minato-flink loader state"),
    ([1, 2], "not a minato-flink loader state"),
    ({"version": 1, "rank": 1, "consumed": {}}, "the state is rank 1's; this loader is rank 0"),
    ({"version": 1, "rank": 0}, "bad loader state"),
    ({"version": 1, "rank": 0, "consumed": [3]}, "bad loader state"),
])
def test_should_refuse_in_one_line_a_state_that_is_not_its_own(state, message):
    loader = MinatoLoader("127.0.0.1:9", rank=0)
    with pytest.raises(LoaderError, match=message):
        loader.load_state_dict(state)

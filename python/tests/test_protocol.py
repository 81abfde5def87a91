"""What the loader says, in one line, to a peer that is not a minato-flink job or breaks the
protocol, and to a saved state that is not its own: no job needed, a socket plays the peer."""

import json
import pickle
import socket
import struct
import threading
import time
import warnings

import pytest
import torch

from minato_flink import Batch, ConsumedSet, LoaderError, LoaderWarning, MinatoLoader


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


READY = frame({"type": "ready"})  # the hello checked: the loader sends its consumed samples
WELCOME_MESSAGE = {"type": "welcome", "samples": 4, "batch": 2, "slots": []}
WELCOME = READY + frame(WELCOME_MESSAGE)
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
    image, label = batch
    assert image.shape == tuple(SHAPE) and label.shape == tuple(SHAPE)
    assert batch.samples.tolist() == [[0, 0], [0, 1]] and batch.paths == ["fast", "slow"]
    assert bytes(label.flatten().tolist()) == bytes(range(64, 80))
    again = pickle.loads(pickle.dumps(batch))  # a tuple subclass rebuilt with its samples
    assert isinstance(again, Batch) and again.samples.tolist() == [[0, 0], [0, 1]]
    assert again.cases == batch.cases and again.step == 0 and torch.equal(again[1], label)


@pytest.mark.parametrize("reply, message", [
    (b"HTTP/1.1 400 Bad Request\r\n\r\n", "a frame of 1213486160 bytes: not a minato-flink job"),
    (frame(b"<html>"), "a frame that is not JSON"),
    (frame([1, 2]), "a frame without a message type"),
    (frame({"type": "banner"}), "expected 'ready', got 'banner'"),
    (READY + frame({"type": "banner"}), "expected 'welcome', got 'banner'"),
    (frame({"type": "refused", "reason": "wrong or missing token"}),
     "the job refused this process: wrong or missing token"),
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
    ({"version": 1, "rank": 0, "consumed": {}, "epoch": "two"}, "bad loader state"),
    ({"version": 1, "rank": 0, "consumed": {}, "steps": -1}, "bad loader state: step -1"),
    ({"version": 1, "rank": 0, "consumed": {"0": "z:AQI="}}, "bad loader state: consumed samples "
                                                            "of epoch '0'"),
])
def test_should_refuse_in_one_line_a_state_that_is_not_its_own(state, message):
    loader = MinatoLoader("127.0.0.1:9", rank=0)
    with pytest.raises(LoaderError, match=message):
        loader.load_state_dict(state)


RUN = {"id": None, "dir": None, "epochs": 3, "batch": 2, "samples": 4, "ranks": 1}


@pytest.mark.parametrize("run, position, message", [
    (dict(RUN, epochs=2), {}, r"of another run \(2 epochs, 4 samples a rank in batches of 2, 1"
                              r" rank\(s\)\); the job serves 3 epochs, 4 samples"),
    (dict(RUN, batch=4), {}, "in batches of 4"),
    (dict(RUN, samples=40), {}, "40 samples a rank"),
    (RUN, {"steps": 3}, r"at epoch 0, step 3; the job's run has 3 epochs of 2 steps"),
])
def test_should_refuse_in_one_line_a_state_of_a_run_the_job_does_not_serve(run, position, message):
    """The state names its run's shape; the job's welcome says what it serves."""
    welcome = frame({"type": "welcome", "epochs": 3, "batch": 2, "samples": 4, "ranks": 1,
                     "slots": []})
    peer = Peer(READY, welcome)
    loader = MinatoLoader(peer.endpoint, rank=0, connect_timeout_s=5, pin_memory=False)
    loader.load_state_dict({"version": 1, "rank": 0, "consumed": {}, "run": run, **position})
    try:
        with pytest.raises(LoaderError, match=message) as raised:
            next(iter(loader))
        assert "\n" not in str(raised.value)
    finally:
        loader.close()
        peer.close()


def test_should_refuse_at_once_a_state_of_another_run_than_the_run_directorys(tmp_path):
    (tmp_path / "run-id").write_text("b\n")
    loader = MinatoLoader(run_dir=str(tmp_path), rank=0)
    with pytest.raises(LoaderError, match=r"saved from another run \(run a in /elsewhere, not run"
                                          r" b in " + str(tmp_path)):
        loader.load_state_dict({"version": 1, "rank": 0, "consumed": {},
                                "run": dict(RUN, id="a", dir="/elsewhere")})
    loader.load_state_dict({"version": 1, "rank": 0, "consumed": {}, "run": dict(RUN, id="b")})


class Recorder:
    """A peer that answers the hello `ready` as a job that checked it, the consumed samples that
    follow with `serve(consumed, conn)`, and records every frame the loader sends it afterwards
    (credits, done)."""

    def __init__(self, serve):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.hello, self.consumed, self.frames, self.conn = None, None, [], None
        self.done = threading.Event()
        self._serve = serve
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        conn, _ = self.server.accept()
        self.conn = conn
        with conn:
            self.hello = read_frame(conn)
            conn.sendall(READY)
            self.consumed = read_frame(conn)["consumed"]
            self._serve(self.consumed, conn)
            if self.done.is_set():
                return
            try:
                while (m := read_frame(conn)) is not None:
                    self.frames.append(m)
            except OSError:
                pass

    def close(self):
        """Fails as a job does: its connection ends."""
        self.done.set()
        self.server.close()
        if self.conn is not None:
            try:
                self.conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def read_frame(conn):
    head = conn.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    (n,) = struct.unpack(">I", head)
    return json.loads(conn.recv(n, socket.MSG_WAITALL))


def batch_of(samples, step):
    body = bytes(range(80))
    return batch_message(step=step, samples=[[e, i, i, "fast"] for e, i in samples]) + body


def test_should_take_the_next_batch_while_the_step_runs():
    """The loader's thread copies a batch and credits the job for another before the training
    loop asks for it: the credit for the second batch comes while the first one's step runs."""
    peer = Recorder(lambda consumed, conn: conn.sendall(
        frame(WELCOME_MESSAGE) + batch_of([(0, 0), (0, 1)], 0) + batch_of([(0, 2), (0, 3)], 1)))
    loader = MinatoLoader(f"127.0.0.1:{peer.port}", rank=0, connect_timeout_s=5, pin_memory=False)
    try:
        it = iter(loader)
        first = next(it)
        assert first.samples.tolist() == [[0, 0], [0, 1]]
        deadline = time.monotonic() + 5
        while sum(m["type"] == "credit" for m in peer.frames) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)  # the "step": the loop does not ask for the second batch
        assert [m["type"] for m in peer.frames] == ["credit", "credit", "credit"]
        assert [m["n"] for m in peer.frames] == [2, 1, 1]
        assert next(it).samples.tolist() == [[0, 2], [0, 3]]
    finally:
        loader.close()
        peer.close()


def test_should_yield_nothing_twice_when_the_job_goes_away_with_batches_ready(tmp_path):
    """Batches the thread had ready when the job went away are not yielded: the job that serves
    again learns from the consumed samples the loader sends which were, and serves the rest, each
    once."""
    from minato_flink.consumed import ConsumedSet

    every = [(0, i) for i in range(6)]
    run = tmp_path / "run"
    (run / "serving").mkdir(parents=True)

    def point_at(peer):
        (run / "serving" / "rank-0.json").write_text(
            json.dumps({"host": "127.0.0.1", "port": peer.port}))

    def first_job(consumed, conn):  # sends everything, then fails
        conn.sendall(welcome + b"".join(batch_of(every[k:k + 2], k // 2) for k in (0, 2, 4)))

    def restored_job(wire, conn):  # serves what the consumed samples do not name
        consumed = ConsumedSet.from_wire(wire)
        rest = [s for s in every if s not in consumed]
        conn.sendall(welcome + b"".join(batch_of(rest[k:k + 2], k // 2)
                                        for k in range(0, len(rest), 2)))
        conn.sendall(frame({"type": "end"}))

    welcome = frame({"type": "welcome", "samples": 6, "batch": 2, "slots": []})
    first = Recorder(first_job)
    point_at(first)
    loader = MinatoLoader(run_dir=str(run), rank=0, connect_timeout_s=5, reconnect_s=10,
                          pin_memory=False)
    second = None
    try:
        it = iter(loader)
        yielded = [tuple(s) for s in next(it).samples.tolist()]
        second = Recorder(restored_job)
        point_at(second)
        first.close()  # the job fails with two batches sent after the one yielded
        deadline = time.monotonic() + 10
        while second.consumed is None and time.monotonic() < deadline:
            time.sleep(0.01)  # the step; the thread meanwhile loses the job and connects again
        for batch in it:
            yielded += [tuple(s) for s in batch.samples.tolist()]
        assert sorted(yielded) == every and len(yielded) == len(set(yielded))
        assert second.consumed is not None and "consumed" not in second.hello
        again = ConsumedSet.from_wire(second.consumed)
        assert [s for s in every if s in again] == every[:2]
    finally:
        loader.close()
        first.close()
        if second is not None:
            second.close()


def test_should_share_the_runs_steps_out_over_its_epochs_a_pass_each():
    """Two steps over three epochs: passes of 1, 1 and 0 steps, every rank alike (the first
    epochs take the extra steps); a pass beyond the run's epochs yields nothing, and the run's
    end is taken after its last step."""
    welcome = frame({"type": "welcome", "samples": 4, "batch": 2, "epochs": 3, "slots": []})
    peer = Recorder(lambda consumed, conn: conn.sendall(
        welcome + batch_of([(0, 0), (0, 1)], 0) + batch_of([(1, 0), (1, 1)], 1)
        + frame({"type": "end"})))
    loader = MinatoLoader(f"127.0.0.1:{peer.port}", rank=0, connect_timeout_s=5, pin_memory=False)
    try:
        assert (loader.epochs, loader.run_steps) == (3, 2)
        passes = []
        for epoch in range(4):
            assert loader.epoch == epoch
            steps = len(loader)
            passes.append((steps, [b.samples.tolist() for b in loader]))
        assert passes == [(1, [[[0, 0], [0, 1]]]), (1, [[[1, 0], [1, 1]]]), (0, []), (0, [])]
        assert loader._ended
        state = loader.state_dict()
        assert (state["steps"], state["epoch"]) == (2, 3)
    finally:
        loader.close()
        peer.close()


def test_should_never_step_a_schedule_sized_by_len_past_its_end():
    """A OneCycleLR of epochs x len(loader) steps, asked before the first pass, steps once a
    batch through five steps over three epochs: it raises if stepped past its total."""
    welcome = frame({"type": "welcome", "samples": 10, "batch": 2, "epochs": 3, "slots": []})
    served = [(0, i) for i in range(6)] + [(1, i) for i in range(4)]
    peer = Recorder(lambda consumed, conn: conn.sendall(
        welcome + b"".join(batch_of(served[k:k + 2], k // 2) for k in range(0, 10, 2))
        + frame({"type": "end"})))
    loader = MinatoLoader(f"127.0.0.1:{peer.port}", rank=0, connect_timeout_s=5, pin_memory=False)
    try:
        weight = torch.nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([weight], lr=0.1)
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=0.1, total_steps=loader.epochs * len(loader))
        steps = []
        for epoch in range(loader.epochs):
            steps.append(0)
            for _ in loader:
                opt.step()
                sched.step()
                steps[-1] += 1
        assert steps == [2, 2, 1]
    finally:
        loader.close()
        peer.close()


def test_should_keep_a_finished_epoch_in_a_few_hundred_bytes_and_read_plain_bitmaps():
    from minato_flink.consumed import ConsumedSet
    consumed = ConsumedSet()
    for epoch, end in ((0, 1_000_000), (1, 1_000_000), (2, 500_000)):
        for index in range(3, end, 8):  # rank 3 of 8
            consumed.add(epoch, index)
    wire = consumed.to_wire()
    assert all(v.startswith("z:") for v in wire.values())
    assert len(wire["0"]) < 300 and len(wire["1"]) < 300  # 125,000 bytes of bitmap each
    back = ConsumedSet.from_wire(wire)
    assert len(back) == len(consumed) == 2 * 125_000 + 62_500
    assert (2, 499_995) in back and (2, 500_003) not in back and (0, 4) not in back
    consumed.add(2, 500_003)  # the epoch's compressed form is made again
    assert (2, 500_003) in ConsumedSet.from_wire(consumed.to_wire())
    plain = ConsumedSet.from_wire({"0": "AQI="})  # a state saved before compression
    assert (0, 0) in plain and (0, 9) in plain and len(plain) == 2


def serving(welcome, batches, end=True, **loader_kw):
    """A loader on a peer that welcomes it with `welcome`, sends batches of these samples (steps
    from 0) and, with `end`, the run's end."""
    peer = Recorder(lambda hello, conn: conn.sendall(
        frame({"type": "welcome", "slots": [], **welcome})
        + b"".join(batch_of(b, step) for step, b in enumerate(batches))
        + (frame({"type": "end"}) if end else b"")))
    loader = MinatoLoader(f"127.0.0.1:{peer.port}", rank=0, connect_timeout_s=5,
                          pin_memory=False, **loader_kw)
    return peer, loader


def test_should_refuse_in_one_line_a_job_of_another_batch_size():
    peer, loader = serving({"samples": 4, "batch": 2}, [], end=False, batch_size=8)
    try:
        with pytest.raises(LoaderError, match=r"^rank 0: the job's batches hold 2 samples, not "
                                              r"the loader's batch_size of 8$"):
            next(iter(loader))
    finally:
        loader.close()
        peer.close()


def test_should_leave_a_short_last_batch_out_under_drop_last_and_count_it_consumed():
    """5 samples in batches of 2 over one epoch: two steps, the fifth sample consumed without
    being yielded, so that a job the state is given to serves it no more."""
    peer, loader = serving({"samples": 5, "batch": 2, "epochs": 1},
                           [[(0, 0), (0, 1)], [(0, 2), (0, 3)], [(0, 4)]], drop_last=True)
    try:
        assert (len(loader), loader.run_steps, loader.batch_size) == (2, 2, 2)
        assert len(loader.sampler) == 4
        yielded = [batch.samples.tolist() for batch in loader]
        assert yielded == [[[0, 0], [0, 1]], [[0, 2], [0, 3]]]
        assert loader._ended
        state = loader.state_dict()
        assert state["steps"] == 2 and len(ConsumedSet.from_wire(state["consumed"])) == 5
    finally:
        loader.close()
        peer.close()


def test_should_say_how_many_batches_fewer_a_pass_yields_when_the_run_ends_short():
    """6 samples over 2 epochs, 3 steps planned (2, 1); the job leaves 3 out during the run and
    ends after 2 batches: the last pass yields none of its 1, and says so; len() is then 0."""
    peer, loader = serving({"samples": 6, "batch": 2, "epochs": 2},
                           [[(0, 0), (0, 1)], [(0, 3), (1, 1)]])
    try:
        assert [len(loader), len(loader.sampler)] == [2, 4]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a full pass says nothing
            assert len(list(loader)) == 2
        assert len(loader) == 1
        with pytest.warns(LoaderWarning) as said:
            assert list(loader) == []
        assert [str(w.message) for w in said] == [
            "rank 0: epoch 1's pass yielded 0 of its 1 batches (len(loader)): the job left 2 of "
            "this rank's 6 samples out of the run, those of inputs it quarantined during the run "
            "(--on-bad-sample skip; its report lists them)"]
        assert said[0].filename == __file__  # the warning points at the loop, not the loader
        assert (loader.epoch, len(loader), len(loader.sampler)) == (2, 0, 0)
    finally:
        loader.close()
        peer.close()


@pytest.mark.parametrize("welcome, samples", [
    ({"samples": 18, "epochs": 3}, 6),
    ({"samples": 9, "epochs": 3, "ranks": 2}, 6),  # 18 of 3 x 6
    ({"samples": 7, "epochs": 3, "ranks": 2}, 5),  # 14 of 3 x 5: the fifteenth left out
    ({"samples": 5, "epochs": 1, "ranks": 2, "epoch_samples": 11}, 11),
])
def test_should_stand_in_for_the_dataset_with_the_runs_epoch_of_samples(welcome, samples):
    peer, loader = serving({"batch": 2, **welcome}, [], end=False)
    try:
        assert len(loader.dataset) == samples
    finally:
        loader.close()
        peer.close()


def test_should_refuse_in_one_line_a_dataset_length_the_job_leaves_open():
    peer, loader = serving({"samples": 5, "batch": 2, "epochs": 1, "ranks": 2}, [], end=False)
    try:
        with pytest.raises(LoaderError, match=r"^rank 0: the job does not say how many samples "
                                              r"an epoch has, and 10 served over 1 epochs to 2 "
                                              r"ranks leave it 10 to 11$"):
            len(loader.dataset)
    finally:
        loader.close()
        peer.close()


def test_should_check_set_epoch_against_the_loaders_pass_warning_once_a_distance():
    loader = MinatoLoader("127.0.0.1:9", rank=0)  # no question for the job: nothing connects
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loader.sampler.set_epoch(0)
    with pytest.warns(LoaderWarning) as said:
        loader.sampler.set_epoch(1)  # a script that counts its epochs from 1
        loader._epoch = 1
        loader.sampler.set_epoch(2)  # as far apart: said already
        loader.sampler.set_epoch(5)
    assert [str(w.message) for w in said] == [
        f"rank 0: sampler.set_epoch({e}), but the loader's next pass is the run's epoch {k} "
        f"(epochs count from 0), which it yields whatever the sampler is told; a resumed script "
        f"gives the loader its saved state_dict() to go on in the epoch it saved"
        for e, k in ((1, 0), (5, 1))]
    assert {w.filename for w in said} == {__file__}

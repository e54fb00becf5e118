"""KV-cache events (kv_events_config) against the real daemon on the tiny model: a
ZeroMQ subscriber sees BlockStored for a prompt's full blocks with the right token
ids, hashes and parent chain, BlockRemoved when a small KV cache evicts them,
sequence numbers without gaps, and replay; every payload is read the way llm-d's
KV-cache manager reads it (pkg/kvcache/kvevents: events.go, pool.go).

All sockets are on 127.0.0.1; the daemon binds ephemeral ports ("tcp://127.0.0.1:*")
and logs where, so no port is guessed.
"""
import json
import re

import msgpack
import pytest
import zmq

from http_util import request

BLOCK = 16
U64 = (1 << 64) - 1
ROOT_HASH = 0x736C756963650001


# --- sluice's block hash (engine/scheduling/block_pool.cpp), written again from its definition


def _fmix64(x):
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & U64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & U64
    return x ^ (x >> 33)


def block_hash(parent, tokens):
    h = _fmix64(parent ^ 0x9E3779B97F4A7C15)
    for position, token in enumerate(tokens, 1):
        word = (((token & 0xFFFFFFFF) << 20) ^ position) & U64
        h ^= _fmix64((word * 0x9FB21C651E98DF25) & U64)
        h = ((((h << 29) | (h >> 35)) & U64) * 0xD6E8FEB86659FD93 + 0x2545F4914F6CDD1D) & U64
    return _fmix64(h ^ len(tokens))


def chain_hashes(tokens):
    hashes, parent = [], ROOT_HASH
    for i in range(len(tokens) // BLOCK):
        parent = block_hash(parent, tokens[i * BLOCK:(i + 1) * BLOCK])
        hashes.append(parent)
    return hashes


# --- llm-d's decoder, field for field


def decode_like_llm_d(payload):
    """What llm-d's EventBatch.DecodeMsgpack and Pool.processEvent accept: a 2- or
    3-element array [TS float64, Events, DataParallelRank]; each event an array
    whose first element is the tag and whose rest fills the struct's fields in
    declaration order: BlockStored{BlockHashes, ParentBlockHash, TokenIds []uint32,
    BlockSize int, LoraID *int, Medium *string}, BlockRemoved{BlockHashes, Medium}.
    A hash must decode to uint64 or int64 (getHashAsUint64): Go hands an interface{}
    the width it was written in, so only msgpack's 8-byte forms (0xcf, 0xd3) pass."""
    batch = msgpack.unpackb(payload, raw=False, strict_map_key=True)
    assert isinstance(batch, list) and len(batch) >= 2, batch
    assert isinstance(batch[0], float), batch[0]
    assert isinstance(batch[1], list), batch[1]
    if len(batch) > 2:
        assert isinstance(batch[2], int), batch[2]
    events = []
    for event in batch[1]:
        assert isinstance(event, list) and event and isinstance(event[0], str), event
        tag, fields = event[0], event[1:]
        if tag == "BlockStored":
            names = ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium"]
            value = dict(zip(names, fields + [None] * (len(names) - len(fields))))
            assert all(isinstance(t, int) and 0 <= t < 1 << 32 for t in value["token_ids"]), value
            assert isinstance(value["block_size"], int)
            assert value["lora_id"] is None or isinstance(value["lora_id"], int)
        elif tag == "BlockRemoved":
            value = dict(zip(["block_hashes", "medium"], fields + [None] * (2 - len(fields))))
        elif tag == "AllBlocksCleared":
            value = {}
        else:
            raise AssertionError(f"llm-d skips unknown tag {tag!r}")
        if "medium" in value:
            assert value["medium"] is None or isinstance(value["medium"], str), value
        for h in value.get("block_hashes", []) + ([value["parent_block_hash"]] if value.get("parent_block_hash")
                                                  is not None else []):
            assert isinstance(h, int) and 0 <= h <= U64, h
            assert b"\xcf" + h.to_bytes(8, "big") in payload, f"hash {h:#x} is not in the 8-byte uint64 form"
        events.append((tag, value))
    return events


# --- the daemon and its sockets


def kv_daemon(start_daemon, num_blocks):
    """The tiny model with events on and a KV cache of `num_blocks` blocks."""
    probe = start_daemon()
    per_block = int(re.search(r"\((\d+) bytes/block", probe.log).group(1))
    probe.kill()
    config = {"enable_kv_cache_events": True, "endpoint": "tcp://127.0.0.1:*",
              "replay_endpoint": "tcp://127.0.0.1:*", "topic": "kv@e2e@{model}"}
    daemon = start_daemon("--kv-events-config", json.dumps(config),
                          "--kv-cache-bytes", str(num_blocks * per_block), "--block-size", str(BLOCK))
    match = re.search(r"KV-cache events on (tcp://\S+) \(topic \"([^\"]*)\", replay on (tcp://\S+)\)", daemon.log)
    assert match, daemon.log
    assert f"KV cache {num_blocks} blocks" in daemon.log, daemon.log
    return daemon, match.group(1), match.group(2), match.group(3)


def post_json(daemon, path, body):
    status, _, raw = request(daemon, "POST", path, body=json.dumps(body),
                             headers={"Content-Type": "application/json"}, timeout=60)
    assert status == 200, raw
    return json.loads(raw)


def complete(daemon, prompt):
    post_json(daemon, "/v1/completions", {"model": "tiny", "prompt": prompt, "max_tokens": 1, "temperature": 0})


def tokenize(daemon, prompt):
    return post_json(daemon, "/tokenize", {"model": "tiny", "prompt": prompt})["tokens"]


class Subscriber:
    """A SUB socket that keeps every message it got: (topic, seq, payload)."""

    def __init__(self, context, endpoint):
        self.sock = context.socket(zmq.SUB)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"kv@")
        self.sock.connect(endpoint)
        self.messages = []

    def receive(self, timeout_ms):
        if not self.sock.poll(timeout_ms):
            return None
        frames = self.sock.recv_multipart()
        assert len(frames) == 3, frames
        message = (frames[0].decode(), int.from_bytes(frames[1], "big"), frames[2])
        self.messages.append(message)
        return message

    def events(self):
        return [event for _, _, payload in self.messages for event in decode_like_llm_d(payload)]

    def wait_for(self, condition, what, timeout_ms=30_000):
        """Receives until condition(events so far) holds; one message at most `timeout_ms` away."""
        while not condition(self.events()):
            assert self.receive(timeout_ms) is not None, f"no KV event message while waiting for {what}"


def stored_chain(events):
    """The blocks of every BlockStored as (hash, parent hash, its tokens), in order."""
    blocks = []
    for tag, e in events:
        if tag != "BlockStored":
            continue
        parent = e["parent_block_hash"]
        for i, h in enumerate(e["block_hashes"]):
            blocks.append((h, parent, e["token_ids"][i * e["block_size"]:(i + 1) * e["block_size"]]))
            parent = h
    return blocks


def removed(events):
    return {h for tag, e in events if tag == "BlockRemoved" for h in e["block_hashes"]}


def words(seed, count):
    return " ".join(f"{seed}{i}" for i in range(count))


def test_kv_events_store_evict_sequence_and_replay(start_daemon):
    daemon, endpoint, topic, replay_endpoint = kv_daemon(start_daemon, num_blocks=12)
    assert topic == "kv@e2e@tiny"
    context = zmq.Context()
    try:
        sub = Subscriber(context, endpoint)
        # A subscription takes a moment to reach the publisher, and what is published
        # before is not delivered: prompts of one new full block each until the first
        # message arrives. Everything after it must arrive, in order.
        for attempt in range(100):
            complete(daemon, words(f"warm{attempt}x", 24))
            if sub.receive(200) is not None:
                break
        assert sub.messages, "no KV event message reached the subscriber"

        # A prompt of three to five full blocks: BlockStored for each of its full
        # blocks, with their tokens, their parent chain and sluice's chained hashes.
        count = 8
        while len(ids := tokenize(daemon, prompt := words("alpha", count))) <= 3 * BLOCK:
            count += 4
        assert len(ids) < 6 * BLOCK, len(ids)
        num_full = len(ids) // BLOCK
        complete(daemon, prompt)
        last = ids[(num_full - 1) * BLOCK:num_full * BLOCK]
        sub.wait_for(lambda ev: any(tokens == last for _, _, tokens in stored_chain(ev)), "the prompt's blocks")
        # Follow the chain from the prompt's first block: each block's parent is the
        # one before it, and its tokens are the prompt's next BLOCK tokens.
        chain, parent = [], None
        for i in range(num_full):
            matches = [h for h, p, tokens in stored_chain(sub.events())
                       if p == parent and tokens == ids[i * BLOCK:(i + 1) * BLOCK]]
            assert len(matches) == 1, (i, matches)
            parent = matches[0]
            chain.append(parent)
        # The hashes are sluice's documented chained hash of the tokens.
        expected = chain_hashes(ids)
        assert chain == expected

        # A different prompt (token ids) that needs every block of the cache: the first
        # prompt's cached blocks are all evicted.
        beta = tokenize(daemon, words("beta", 12 * BLOCK))[:12 * BLOCK - 2]
        assert len(beta) == 12 * BLOCK - 2 and beta[:BLOCK] != ids[:BLOCK]
        complete(daemon, beta)
        sub.wait_for(lambda ev: set(expected) <= removed(ev), "the prompt's blocks to be evicted")

        # Nothing missing in between: every seq is the one before + 1, one topic.
        seqs = [seq for _, seq, _ in sub.messages]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
        assert {t for t, _, _ in sub.messages} == {topic}

        # Replay from the first seq received: the same messages, then the end marker.
        dealer = context.socket(zmq.DEALER)
        dealer.connect(replay_endpoint)
        dealer.send_multipart([b"", seqs[0].to_bytes(8, "big")])
        replayed = {}
        while True:
            assert dealer.poll(10_000), "replay did not answer"
            frames = dealer.recv_multipart()
            assert len(frames) == 3 and frames[0] == b"", frames
            seq = int.from_bytes(frames[1], "big", signed=True)
            if seq == -1:
                break
            replayed[seq] = frames[2]
        assert {seq: payload for _, seq, payload in sub.messages} == {
            seq: payload for seq, payload in replayed.items() if seq <= seqs[-1]}
    finally:
        context.destroy(linger=0)


def test_kv_events_connect_to_a_bound_subscriber_as_llm_d_runs_it(start_daemon):
    # llm-d's indexer binds its SUB socket and the engines connect: an endpoint
    # without "*" is connected to. The first message is the pool's AllBlocksCleared.
    context = zmq.Context()
    try:
        sub = context.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"kv@")
        port = sub.bind_to_random_port("tcp://127.0.0.1")
        config = {"enable_kv_cache_events": True, "endpoint": f"tcp://127.0.0.1:{port}"}
        daemon = start_daemon("--kv-events-config", json.dumps(config))
        assert f"KV-cache events on tcp://127.0.0.1:{port}" in daemon.log
        got = None
        for attempt in range(100):  # new full blocks each time, until the connection carries one
            complete(daemon, words(f"gamma{attempt}x", 24))
            if sub.poll(200):
                got = sub.recv_multipart()
                break
        assert got, "nothing arrived on the bound subscriber"
        topic, _, payload = got
        assert re.fullmatch(r"kv@[^@]+@tiny", topic.decode()), topic
        assert decode_like_llm_d(payload)
    finally:
        context.destroy(linger=0)


def test_kv_events_are_off_by_default(daemon):
    assert "KV-cache events" not in daemon.log
    assert re.search(r"config: kv_events_config: \{\} \(off\)", daemon.log), daemon.log

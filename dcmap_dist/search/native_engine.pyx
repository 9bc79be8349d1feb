# cython: language_level=3, boundscheck=False, wraparound=False, infer_types=False
# distutils: language = c++
"""The native engine: the C++ core of ``search/native/`` behind the calls of
:class:`~dcmap_dist.search.engine.Engine`, step for step the Python engine's search
(:class:`~dcmap_dist.search.explorer.Explorer`, its reference), with its state in C++
(docs/engine.md).

Python values cross into the core as ids: a mask (a Python int) as its words, interned;
a message as the id of its value (one id per distinct value, as the Python engine keeps
one object per value); a branch, a link key and a state as records of ids. They come back
as the Python engine's own values (Branch, key tuples, SearchState), so that checkpoints,
Ray batches, outcomes and the audit read them unchanged. A step runs with the GIL
released; on a memo miss the core calls back into Python for a cost, a bound or an
estimate (the Python engine's own code, so every float is the same), and every 128 loop
turns or inner steps for the limits (running the signal handlers first, so Ctrl-C is
heard within a fraction of a second).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport int8_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libcpp cimport bool as cbool
from libcpp.memory cimport unique_ptr
from libcpp.pair cimport pair
from libcpp.string cimport string
from libcpp.vector cimport vector

import contextlib
import math
import pickle
import random
import zlib

from ..limits import SearchInterrupted
from .batches import CHECKED_FROM, checked
from .branch import Branch
from .core import core_input, definition, rebuilt
from .histories import HistoryTable, histories_of
from .linking import Entry
from .state import Improvement, SearchState
from .worklog import WorkLog

__all__ = ["NativeEngine"]

MAX_SERIAL = 1 << 32  # a record serial past this is refused (a damaged checkpoint, not a search)

ctypedef uint32_t Id  # a message's raw word: the binding's numbering, as the Oracle's callbacks pass it

cdef extern from "native/engine.hpp" namespace "dcmap":
    # the core's ids (native/ids.hpp): one type per kind, made from a word only explicitly
    cdef cppclass MaskId "dcmap::MaskId":
        MaskId()
        MaskId(uint32_t)
        uint32_t value()
        cbool operator==(MaskId)
    cdef cppclass ItemId "dcmap::ItemId":
        ItemId()
        ItemId(uint32_t)
        uint32_t value()
    cdef cppclass SeqId "dcmap::SeqId":
        SeqId()
        SeqId(uint32_t)
        uint32_t value()
    cdef cppclass MessageId "dcmap::MessageId":
        MessageId()
        MessageId(uint32_t)
        uint32_t value()
    cdef cppclass BigMaskId "dcmap::BigMaskId":
        BigMaskId()
        BigMaskId(uint32_t)
        uint32_t value()

    cdef MaskId LAYER_DONE
    cdef int64_t NO_LINK

    cdef cppclass Branch_ "dcmap::Branch":
        double cost, estimate, bound
        int64_t link
        MaskId assigned, fixed
        SeqId comps, frontier, joins
        int layer

    # a link key (native/branch.hpp): made by its kind's maker, read by its parts' names
    cdef cppclass Key_ "dcmap::Key":
        int layer
        cbool lean()
        cbool done()
        MaskId assigned() except +
        MaskId fixed() except +
        MaskId held() except +
        SeqId items() except +
        SeqId masks() except +
        BigMaskId blocked() except +
        @staticmethod
        Key_ lean_done(int, SeqId, SeqId, BigMaskId)
        @staticmethod
        Key_ lean_inside(int, MaskId, MaskId, MaskId, SeqId, SeqId, BigMaskId)
        @staticmethod
        Key_ full_done(int, SeqId, SeqId)
        @staticmethod
        Key_ full_inside(int, MaskId, MaskId, SeqId, SeqId)

    cdef cppclass Entry_ "dcmap::Entry":
        double best
        int64_t record

    cdef cppclass Arrival_ "dcmap::Arrival":
        Key_ key
        Branch_ branch

    cdef cppclass Improvement_ "dcmap::Improvement":
        int64_t iteration
        double seconds, cost
        int64_t link
        SeqId joins

    cdef cppclass ModelTables:
        vector[uint64_t] cards
        vector[int] name_rank, eliminate_rank, naive_rank
        cbool canonical, bounds
        double addition
        vector[double] above, own, absorbed, additive
        vector[uint64_t] spread
        size_t most_added, most_grouped, most_ordered, most_partitioned
        vector[vector[uint64_t]] absorbing_kids
        vector[vector[double]] absorbing_charges

    cdef cppclass OutBatch_ "dcmap::OutBatch":
        int owner
        string bytes
        vector[MessageId] messages
        size_t rows

    cdef cppclass BatchInfo_ "dcmap::BatchInfo":
        cbool pickled
        size_t pickled_at
        uint32_t messages, rows

    cdef cppclass Footprint:
        size_t values, values_count, masks, masks_count, seqs, seqs_count, cost_memo, cost_entries, bound_memo, bound_entries, other_memos
        size_t link_table, link_records, histories, histories_count, queue, open_branches, dominated
        size_t dominated_count

    ctypedef int (*CostCallback)(void*, const uint64_t*, const uint64_t*, const uint64_t*, const uint32_t*, size_t,
                                 double*, uint32_t*) noexcept
    ctypedef int (*BoundCallback)(void*, int, const uint64_t*, const uint64_t*, const uint32_t*, size_t,
                                  double*) noexcept
    ctypedef int (*EstimateCallback)(void*, const uint64_t*, double*) noexcept
    ctypedef int (*ResourcesCallback)(void*, int*) noexcept

    cdef cppclass Oracle:
        void* context
        CostCallback cost
        BoundCallback bound
        EstimateCallback estimate
        ResourcesCallback resources

    cdef cppclass CoreTopology:
        int n, l_max
        vector[int] layer
        vector[uint64_t] parents, children, neighbours, anc, desc, layer_mask, above

    cdef cppclass CoreOptions:
        cbool single_scheme, full_keys, has_estimator, has_owner, notify
        double alpha
        int64_t owner
        int shard_index, shards

    cdef cppclass WorkLog_ "dcmap::WorkLog":
        vector[double] costs, bounds
        vector[int64_t] links, dominated
        vector[int8_t] arrived

    cdef cppclass EngineBase:
        int words()
        MaskId mask(const uint64_t*) except +
        void mask_words(MaskId, uint64_t*) except +
        ItemId item(MaskId, MessageId) except +
        void item_of(ItemId, MaskId*, MessageId*) except +
        SeqId mask_seq(const vector[MaskId]&) except +
        SeqId item_seq(const vector[ItemId]&) except +
        vector[MaskId] masks_of(SeqId) except +
        vector[ItemId] items_of(SeqId) except +
        BigMaskId bigmask(vector[uint64_t]) except +
        vector[uint64_t] bigmask_of(BigMaskId) except +
        MaskId zero_mask()
        SeqId empty_seq()
        int64_t iterations()
        double g_min()
        size_t link_records()
        cbool has_shard()
        void set_counters(int64_t, double, double)
        void set_random_state(const vector[uint32_t]&, uint32_t) except +
        vector[uint32_t] random_state()
        void hear(double)
        void add_dominated(int64_t) except +
        void place(int64_t, double, cbool, double)
        void start(const Branch_&, const Branch_&) except +
        int step(double, int64_t, int64_t, cbool, double) except + nogil
        cbool offer(const Key_&, const Branch_&, Branch_*) except +
        void receive(const vector[Arrival_]&) except +
        void adopt(const Branch_&) except +
        void load_entry(const Key_&, double, int64_t) except +
        void load_histories(int64_t, const string&) except +
        Key_ key_of(const Branch_&) except +
        int route(const Key_&, int) except +
        vector[pair[int, vector[Arrival_]]] take_outbox() except +
        vector[OutBatch_] take_batches(cbool) except +
        BatchInfo_ batch_info(const unsigned char*, size_t) except +
        vector[uint64_t] batch_messages(const unsigned char*, size_t) except +
        size_t receive_batch(const unsigned char*, size_t, const vector[MessageId]*, cbool) except +
        string take_share(cbool, vector[MessageId]*) except +
        void load_share(const unsigned char*, size_t, const vector[MessageId]*) except +
        vector[Improvement_] take_improvements() except +
        vector[int64_t] take_notices() except +
        void keep_log()
        WorkLog_ take_log() except +
        vector[Branch_] take_open() except +
        vector[Branch_] open_branches() except +
        double least_bound()
        size_t open_count()
        cbool final_entry(Entry_*)
        vector[pair[Key_, Entry_]] entries() except +
        vector[int64_t] history_ids() except +
        cbool histories(int64_t, string*) except +
        vector[int64_t] dominated_records() except +
        Footprint footprint()
        uint64_t collections()
        void collect() except +
        void use_model(const ModelTables&) except +

    unique_ptr[EngineBase] make_engine(const CoreTopology&, const CoreOptions&, const Oracle&) except +
    int words_for(int)

# why a step ended: the codes of native/vocabulary.hpp's Reason, as the Python engine names them
REASONS = {1: "idle", 2: "budget", 3: "max_iterations", 4: "time_limit", 5: "memory_limit", 6: "interrupted"}
CODES = {"time_limit": 4, "memory_limit": 5, "interrupted": 6}


cdef int _cost(void* context, const uint64_t* nodes, const uint64_t* same, const uint64_t* child_masks,
               const uint32_t* child_messages, size_t children, double* cost, uint32_t* message) noexcept with gil:
    cdef NativeEngine engine = <NativeEngine>context
    cdef size_t k
    try:
        key = [engine._int(nodes), engine._int(same)]
        for k in range(children):
            key.append(engine._int(child_masks + k * engine.width))
            key.append(engine._py_message(child_messages[k]))
        value, held = engine.problem.cluster_layer(tuple(key), engine._watch)
        cost[0] = value
        message[0] = engine._message(held)
        return 0
    except SearchInterrupted as stop:  # a limit reached after a slow call (Reference.cluster_layer)
        return CODES[stop.args[0]]
    except BaseException as exc:
        engine._error = exc
        return -1


cdef int _bound(void* context, int layer, const uint64_t* assigned, const uint64_t* item_masks,
                const uint32_t* item_messages, size_t items, double* bound) noexcept with gil:
    cdef NativeEngine engine = <NativeEngine>context
    cdef size_t k
    try:
        frontier = []
        for k in range(items):
            frontier.append((engine._int(item_masks + k * engine.width), engine._py_message(item_messages[k])))
        frontier = tuple(frontier)
        bound[0] = engine.problem.frontier_bound(layer, -1 if assigned == NULL else engine._int(assigned), frontier)
        return 0
    except BaseException as exc:
        engine._error = exc
        return -1


cdef int _estimate(void* context, const uint64_t* rest, double* estimate) noexcept with gil:
    cdef NativeEngine engine = <NativeEngine>context
    try:
        estimate[0] = engine.problem.rest_estimate(engine._int(rest))
        return 0
    except BaseException as exc:
        engine._error = exc
        return -1


cdef int _resources(void* context, int* reason) noexcept with gil:
    cdef NativeEngine engine = <NativeEngine>context
    try:
        PyErr_CheckSignals()  # runs the Python signal handlers: Ctrl-C sets the interrupt flag
        found = engine._watch.resources_exceeded() if engine._watch is not None else None
        reason[0] = CODES[found] if found else 0
        return 0
    except BaseException as exc:
        engine._error = exc
        return -1


cdef class NativeEngine:
    """The native engine for one actor's share of a search of ``problem`` (the arguments
    are :class:`~dcmap_dist.search.explorer.Explorer`'s), answering the calls of
    :class:`~dcmap_dist.search.engine.Engine` as the Python engine does. The core takes
    search/core.py's CoreInput and asks ``problem`` (a core.Reference) for what it does
    not compute itself."""

    cdef unique_ptr[EngineBase] core
    cdef Oracle oracle
    cdef readonly int width  # words per mask
    cdef readonly int n
    cdef public object problem
    cdef object _watch
    cdef object _error
    cdef list _messages  # id -> the message the search holds
    cdef dict _message_ids
    cdef dict _ints  # mask id -> its Python int
    cdef dict _item_tuples  # item id -> (members, message)
    cdef dict _frontiers  # sequence id -> tuple of items
    cdef dict _mask_tuples  # sequence id -> tuple of ints
    cdef object _options, _seed  # search/core.py's CoreOptions, and the seed: for pickling
    cdef uint64_t _collections  # the core's collections of its sequences: their ids change each time
    cdef readonly bint native_model  # the built-in cost model runs in the core (its messages are masks)

    def __init__(self, problem, alpha=0.6, seed=0, owner=None, shard_index=0, shards=1, notify=False):
        record = core_input(problem, alpha, owner, shard_index, shards, notify)
        topology, options = record.topology, record.options
        self.problem = problem  # the Reference the core asks back (search/core.py)
        self.n = topology.n
        self.width = words_for(topology.n)
        self._messages = []
        self._message_ids = {}
        self._ints = {}
        self._item_tuples = {}
        self._frontiers = {}
        self._mask_tuples = {}
        self._watch = None
        self._error = None
        self._options, self._seed = options, seed
        cdef CoreTopology data
        data.n = topology.n
        data.l_max = topology.l_max
        data.layer = list(topology.layer)
        data.parents = self._words_of(topology.parents)
        data.children = self._words_of(topology.children)
        data.neighbours = self._words_of(topology.neighbours)
        data.anc = self._words_of(topology.anc)
        data.desc = self._words_of(topology.desc)
        data.layer_mask = self._words_of(topology.layer_mask)
        data.above = self._words_of(topology.above)
        cdef CoreOptions core_options
        core_options.single_scheme = options.single_scheme
        core_options.full_keys = options.full_keys
        core_options.has_estimator = options.has_estimator
        core_options.alpha = options.alpha
        core_options.has_owner = options.owner is not None
        core_options.owner = 0 if options.owner is None else options.owner
        core_options.shard_index = options.shard_index
        core_options.shards = options.shards
        core_options.notify = options.notify
        self.oracle.context = <void*>self
        self.oracle.cost = _cost
        self.oracle.bound = _bound
        self.oracle.estimate = _estimate
        self.oracle.resources = _resources
        self.core = make_engine(data, core_options, self.oracle)
        self._set_random_state(random.Random(seed).getstate())
        self.native_model = record.model is not None
        if self.native_model:
            self.core.get().use_model(self._model_tables(record.model))

    def __reduce__(self):
        """Pickled as what rebuilds it (its problem's definition and its own arguments) and
        its state as one blob (:meth:`take_share`), which the receiving process loads."""
        options = self._options
        return _rebuild, (definition(self.problem), options.alpha, self._seed, options.owner, options.shard_index,
                          options.shards, options.notify, self.take_share(), self.iterations, self.g_min,
                          self.random_state())

    cdef ModelTables _model_tables(self, tables) except *:
        """search/core.py's ModelTables as the core's struct (masks as words)."""
        cdef ModelTables out
        out.cards = list(tables.cards)
        out.name_rank = list(tables.name_rank)
        out.eliminate_rank = list(tables.eliminate_rank)
        out.naive_rank = list(tables.naive_rank)
        out.canonical = tables.canonical
        out.addition = tables.addition
        out.bounds = tables.bounds
        out.above = list(tables.above)
        out.own = list(tables.own)
        out.absorbed = list(tables.absorbed)
        for absorbers in tables.absorbing:
            out.absorbing_kids.push_back(self._words_of([mask for mask, _ in absorbers]))
            out.absorbing_charges.push_back([charge for _, charge in absorbers])
        out.additive = list(tables.additive)
        out.spread = self._words_of(tables.spread)
        out.most_added = tables.most_added
        out.most_grouped = tables.most_grouped
        out.most_ordered = tables.most_ordered
        out.most_partitioned = tables.most_partitioned
        return out

    # -- values: Python ints and messages <-> ids ---------------------------------------------
    cdef vector[uint64_t] _words_of(self, masks) except *:
        cdef vector[uint64_t] out
        for mask in masks:
            data = int(mask).to_bytes(8 * self.width, "little")
            for k in range(self.width):
                out.push_back(int.from_bytes(data[8 * k:8 * k + 8], "little"))
        return out

    cdef object _int(self, const uint64_t* words):
        return int.from_bytes((<char*>words)[:8 * self.width], "little")

    cdef MaskId _mask(self, object value) except *:
        """The id of a node or component mask: an int of 0 to n bits (ValueError otherwise)."""
        cdef uint64_t words[8]
        if type(value) is not int or value < 0 or value >> self.n:
            raise ValueError(f"{value!r} is not a mask of the network's {self.n} nodes")
        data = value.to_bytes(8 * self.width, "little")
        memcpy(words, <const char*>data, 8 * self.width)
        return self.core.get().mask(words)

    cdef object _py_mask(self, MaskId mask):
        found = self._ints.get(mask.value())
        if found is None:
            found = self._ints[mask.value()] = self._mask_int(mask)
        return found

    cdef object _mask_int(self, MaskId mask):
        cdef uint64_t words[8]
        self.core.get().mask_words(mask, words)
        return self._int(words)

    cdef Id _message(self, object held) except? 0xFFFFFFFF:
        if self.native_model:  # the built-in model's code: a node mask, its id its mask's
            return self._mask(held).value()
        found = self._message_ids.get(held)
        if found is None:
            found = self._message_ids[held] = len(self._messages)
            self._messages.append(held)
        return found

    cdef object _py_message(self, Id message):
        return self._py_mask(MaskId(message)) if self.native_model else self._messages[message]

    cdef ItemId _item(self, object item) except *:
        cdef MaskId members
        if type(item) is not tuple or len(item) != 2:
            raise ValueError(f"a frontier cluster-layer must be (members, message), not {item!r}")
        members = self._mask(item[0])
        if members == self.core.get().zero_mask():
            raise ValueError("a frontier cluster-layer of no nodes")
        return self.core.get().item(members, MessageId(self._message(item[1])))

    cdef object _py_item(self, ItemId item):
        found = self._item_tuples.get(item.value())
        if found is None:
            found = self._item_tuples[item.value()] = self._item_tuple(item)
        return found

    cdef object _item_tuple(self, ItemId item):
        cdef MaskId members
        cdef MessageId message
        self.core.get().item_of(item, &members, &message)
        return (self._py_mask(members), self._py_message(message.value()))

    cdef SeqId _mask_seq(self, object masks, bint nonzero) except *:
        cdef vector[MaskId] ids
        if type(masks) is not tuple:
            raise ValueError(f"a tuple of masks expected, not {type(masks).__name__}")
        for mask in masks:
            ids.push_back(self._mask(mask))
            if nonzero and ids.back() == self.core.get().zero_mask():
                raise ValueError("an empty component or join")
        return self.core.get().mask_seq(ids)

    cdef SeqId _item_seq(self, object items) except *:
        cdef vector[ItemId] ids
        if type(items) is not tuple:
            raise ValueError(f"a tuple of frontier cluster-layers expected, not {type(items).__name__}")
        for item in items:
            ids.push_back(self._item(item))
        return self.core.get().item_seq(ids)

    cdef object _py_masks(self, SeqId seq):
        cdef vector[MaskId] masks
        cdef size_t k
        found = self._mask_tuples.get(seq.value())
        if found is None:
            masks = self.core.get().masks_of(seq)
            found = self._mask_tuples[seq.value()] = tuple([self._py_mask(masks[k]) for k in range(masks.size())])
        return found

    cdef object _py_items(self, SeqId seq):
        cdef vector[ItemId] items
        cdef size_t k
        found = self._frontiers.get(seq.value())
        if found is None:
            items = self.core.get().items_of(seq)
            found = self._frontiers[seq.value()] = tuple([self._py_item(items[k]) for k in range(items.size())])
        return found

    cdef BigMaskId _bigmask(self, object value) except *:
        cdef vector[uint64_t] words
        if type(value) is not int or value < 0:
            raise ValueError(f"{value!r} is not a mask")
        while value:
            words.push_back(value & 0xFFFFFFFFFFFFFFFF)
            value >>= 64
        return self.core.get().bigmask(words)

    cdef object _py_bigmask(self, BigMaskId id):
        value = 0
        for k, word in enumerate(self.core.get().bigmask_of(id)):
            value |= word << (64 * k)
        return value

    # -- branches -------------------------------------------------------------------------------
    cdef Branch_ _branch(self, object b) except *:
        """A Python Branch as the core's record (ValueError naming what is wrong)."""
        cdef Branch_ out
        if not isinstance(b, Branch):
            raise ValueError(f"a Branch expected, not {type(b).__name__}")
        if not isinstance(b.layer, int) or not isinstance(b.link, int) or not isinstance(b.fixed, int):
            raise ValueError("a branch's layer, link and fixed must be ints")
        out.layer = b.layer
        out.assigned = LAYER_DONE if b.assigned == -1 else self._mask(b.assigned)
        out.comps = self._mask_seq(b.comps, True)
        out.frontier = self._item_seq(b.frontier)
        out.cost = b.cost
        out.joins = self._mask_seq(b.joins, True)
        if b.link < -1:
            raise ValueError(f"a branch's link record {b.link} is negative")
        out.link = b.link
        out.estimate = b.estimate
        out.bound = b.bound
        out.fixed = self._mask(b.fixed)
        if math.isnan(out.cost) or math.isnan(out.bound) or math.isnan(out.estimate):
            raise ValueError("a branch's costs must be numbers, not nan")
        return out

    cdef object _py_branch(self, const Branch_& b):
        return Branch(b.layer, -1 if b.assigned == LAYER_DONE else self._py_mask(b.assigned),
                      self._py_masks(b.comps), self._py_items(b.frontier), b.cost, self._py_masks(b.joins),
                      b.link, b.estimate, b.bound, self._py_mask(b.fixed))

    cdef list _py_branches(self, const vector[Branch_]& branches):
        cdef size_t k
        return [self._py_branch(branches[k]) for k in range(branches.size())]

    # -- keys: the Python engine's tuples (search/keys.py) <-> the core's records ---------------
    cdef Key_ _key(self, object key) except *:
        # the parts in the tuple's order (each made in turn: the order the values are interned in)
        cdef MaskId assigned, fixed, held
        cdef SeqId items, masks
        if type(key) is not tuple or len(key) not in (3, 4):
            raise ValueError(f"a link key must be a tuple of 3 (full) or 4 (lean) parts, not {key!r}")
        head = key[0]
        if len(key) == 4:  # lean: (head, items, shape, blocked)
            if type(head) is int:
                items, masks = self._item_seq(key[1]), self._mask_seq(key[2], False)
                return Key_.lean_done(head, items, masks, self._bigmask(key[3]))
            self._check_head(head, 4)
            assigned, fixed, held = self._mask(head[1]), self._mask(head[2]), self._mask(head[3])
            items, masks = self._item_seq(key[1]), self._mask_seq(key[2], False)
            return Key_.lean_inside(head[0], assigned, fixed, held, items, masks, self._bigmask(key[3]))
        # full: (head, comps, frontier)
        if type(head) is int:
            masks = self._mask_seq(key[1], True)
            return Key_.full_done(head, masks, self._item_seq(key[2]))
        self._check_head(head, 3)
        assigned, fixed = self._mask(head[1]), self._mask(head[2])
        masks = self._mask_seq(key[1], True)
        return Key_.full_inside(head[0], assigned, fixed, masks, self._item_seq(key[2]))

    cdef int _check_head(self, object head, int size) except -1:
        if type(head) is not tuple or len(head) != size or type(head[0]) is not int:
            raise ValueError(f"a link key's head must be (layer, ...) of {size} ints, not {head!r}")
        return 0

    cdef object _py_key(self, const Key_& k):
        if k.lean():
            head = k.layer if k.done() else (k.layer, self._py_mask(k.assigned()), self._py_mask(k.fixed()),
                                              self._py_mask(k.held()))
            return (head, self._py_items(k.items()), self._py_masks(k.masks()), self._py_bigmask(k.blocked()))
        head = k.layer if k.done() else (k.layer, self._py_mask(k.assigned()), self._py_mask(k.fixed()))
        return (head, self._py_masks(k.masks()), self._py_items(k.items()))

    cdef vector[Arrival_] _arrivals(self, arrivals) except *:
        cdef vector[Arrival_] out
        cdef Arrival_ a
        for key, branch in arrivals:
            a.key = self._key(key)
            a.branch = self._branch(branch)
            out.push_back(a)
        return out

    cdef int _record(self, object record) except -1:
        if type(record) is not int or not 0 <= record < (1 << 63) or (record & ((1 << 36) - 1)) >= MAX_SERIAL:
            raise ValueError(f"{record!r} is not a link record id")
        return 0

    # -- the Engine protocol ------------------------------------------------------------------
    @property
    def iterations(self):
        """Expansions made by this engine (with those before a :meth:`restore`)."""
        return self.core.get().iterations()

    @property
    def g_min(self):
        """The cost of the best complete mapping known here (inf: none)."""
        return self.core.get().g_min()

    @property
    def link_records(self):
        """Keys in this engine's shard of the link table (0 without one)."""
        return self.core.get().link_records()

    def start(self, first, watch):
        """Begin a search at its root, ``first`` (a complete mapping) bounding it from the start."""
        self.place(0, 0.0, watch)
        self.core.get().start(self._branch(first), self._branch(self.problem.root()))

    def restore(self, state, iterations=0, g_min=math.inf, random_state=None, seconds=0.0):
        """Go on from where a search stood: its counters, then its ``state`` (:meth:`load`)."""
        self.core.get().set_counters(iterations, g_min, seconds)
        if random_state is not None:
            self._set_random_state(random_state)
        self.load(state)

    def hear(self, g_min, dominated=()):
        """News from the other actors: a ``G_min`` found elsewhere, records dominated elsewhere."""
        self.core.get().hear(g_min)
        for record in dominated:
            self._record(record)
            self.core.get().add_dominated(record)

    def place(self, iterations, seconds, watch=None):
        """Where this engine stands in the whole search (see Explorer.place)."""
        self.core.get().place(iterations, seconds, watch is not None, watch.start if watch is not None else 0.0)

    def random_state(self):
        """The state of its random generator, as ``random.Random.getstate()`` gives it."""
        cdef vector[uint32_t] words = self.core.get().random_state()
        return (3, tuple(words), None)

    def _set_random_state(self, state):
        if type(state) is not tuple or len(state) != 3 or state[0] != 3 or len(state[1]) != 625:
            raise ValueError("a random state as random.Random.getstate() gives it expected")
        cdef vector[uint32_t] words = list(state[1][:624])
        self.core.get().set_random_state(words, state[1][624])

    def step(self, watch, until=None, max_iterations=None):
        """Run the loop until the open set is empty (``idle``), the clock passes ``until``
        (``budget``), this engine's iterations reach ``max_iterations``, or a limit of
        ``watch`` is reached (its name). The GIL is released meanwhile."""
        cdef double deadline = math.nan if until is None else until
        cdef int64_t most = -1 if max_iterations is None else max_iterations
        limit = watch.limits.max_iterations
        cdef int64_t watch_most = -1 if limit is None else limit
        cdef double start = watch.start
        cdef int code
        self._watch = watch  # checked after a slow cost call: see _cost
        self._error = None
        try:
            with nogil:
                code = self.core.get().step(deadline, most, watch_most, True, start)
        finally:
            self._watch = None
        self._forget_sequences()
        if code < 0:
            error, self._error = self._error, None
            raise error
        return REASONS[code]

    def collections(self):
        """How many times the core has collected its store (for tests and measurements)."""
        return self.core.get().collections()

    def collect(self):
        """Drop the core's sequences nothing holds any longer now (a step does it as the
        store grows; for tests and measurements)."""
        self.core.get().collect()
        self._forget_sequences()

    cdef _forget_sequences(self):
        """After a collection the core's sequence ids changed: forget their tuples."""
        if self.core.get().collections() != self._collections:
            self._collections = self.core.get().collections()
            self._frontiers.clear()
            self._mask_tuples.clear()

    def collector_paused(self):
        """The Python engine pauses the cycle collector while it takes branches in; the
        native engine makes no Python objects to collect."""
        return contextlib.nullcontext()

    def offer(self, key, branch):
        """Settle ``branch`` at ``key`` in this engine's shard; the branch, linked, if it goes on."""
        cdef Branch_ survivor
        if self.core.get().offer(self._key(key), self._branch(branch), &survivor):
            return self._py_branch(survivor)
        return None

    def receive(self, arrivals):
        """Settle completions sent by other actors; keep the survivors."""
        self.core.get().receive(self._arrivals(arrivals))

    def adopt(self, branches):
        """Take over open branches."""
        for branch in branches:
            self.core.get().adopt(self._branch(branch))

    def load(self, state):
        """Take over a share of the search: its link records and their histories (into this
        engine's shard, if it has one), dominated records, open branches, then completions
        in flight settled against those records. ValueError for a malformed state."""
        if self.core.get().has_shard():
            for key, entry in state.entries.items():
                self._record(entry.record)
                self.core.get().load_entry(self._key(key), entry.best, entry.record)
            for record, held in state.histories.items():
                self._record(record)
                self.core.get().load_histories(record, bytes(held))
        for record in state.dominated:
            self._record(record)
            self.core.get().add_dominated(record)
        self.adopt(state.branches)
        self.receive(state.arrivals)

    def export(self):
        """This engine's share of the search as plain data (what :meth:`load` takes)."""
        cdef vector[pair[Key_, Entry_]] held = self.core.get().entries()
        cdef size_t k
        entries = {self._py_key(held[k].first): Entry(held[k].second.best, held[k].second.record)
                   for k in range(held.size())}
        histories = HistoryTable()
        cdef string run
        for record in self.core.get().history_ids():
            if self.core.get().histories(record, &run):
                for data in histories_of(run):
                    histories.add(record, data)
        return SearchState(self.open_branches(), [], entries, histories, set(self.core.get().dominated_records()))

    def take_outbox(self):
        """The completions waiting to be sent, by owner; the outbox is emptied."""
        cdef vector[pair[int, vector[Arrival_]]] outbox = self.core.get().take_outbox()
        cdef size_t k, j
        return {outbox[k].first: [(self._py_key(outbox[k].second[j].key), self._py_branch(outbox[k].second[j].branch))
                                  for j in range(outbox[k].second.size())]
                for k in range(outbox.size())}

    def take_batches(self, destinations, dumps=pickle.dumps):
        """The outbox as one batch per destination (b"" where none; search/batches.py's
        format, written by the core), emptied; a model's messages pickled with ``dumps``
        (the built-in model's are codes, written as masks)."""
        cdef vector[OutBatch_] found = self.core.get().take_batches(self.native_model)
        cdef size_t k, j
        out = [b""] * destinations
        for k in range(found.size()):
            if not 0 <= found[k].owner < destinations:
                raise ValueError(f"a completion for actor {found[k].owner} of {destinations}")
            pickled = b"" if self.native_model else dumps([self._messages[found[k].messages[j].value()]
                                                      for j in range(found[k].messages.size())])
            out[found[k].owner] = _sealed(found[k].bytes, pickled)
        return out

    def receive_batch(self, batch, settle=True):
        """Settle a batch's completions (from either engine: search/batches.py's format), read
        by the core; how many it held. ValueError naming the damage for a batch that is not
        one of this search's. ``settle`` false: only read them (what reading costs, for
        scripts/benchmark_distributed.py)."""
        if not len(batch):
            return 0
        view = checked(batch)
        cdef const unsigned char[::1] data = view
        cdef vector[MessageId] ids
        if self._batch_message_ids(view, &ids):
            return self.core.get().receive_batch(&data[0], data.shape[0], &ids, settle)
        return self.core.get().receive_batch(&data[0], data.shape[0], NULL, settle)

    def take_share(self, dumps=pickle.dumps):
        """This engine's share of the search (what :meth:`export` gives: taken between
        steps) as one buffer, written by the core: a batch of the share's kind (its link
        entries, open branches, dominated records and histories; docs/distributed.md,
        "Batches"); a model's messages pickled with ``dumps``. What :meth:`load_share` takes."""
        cdef vector[MessageId] ids
        cdef size_t k
        cdef string body = self.core.get().take_share(self.native_model, &ids)
        return _sealed(body, b"" if self.native_model else dumps([self._messages[ids[k].value()] for k in range(ids.size())]))

    def load_share(self, share):
        """Take over a :meth:`take_share` buffer (as :meth:`load` takes a state). ValueError
        naming the damage for one that is not a share of this search."""
        view = checked(share)
        cdef const unsigned char[::1] data = view
        cdef vector[MessageId] ids
        if self._batch_message_ids(view, &ids):
            self.core.get().load_share(&data[0], data.shape[0], &ids)
        else:
            self.core.get().load_share(&data[0], data.shape[0], NULL)

    cdef cbool _batch_message_ids(self, view, vector[MessageId]* ids) except *:
        """The ids here of a (checked) batch's messages, in ``ids``: whether they are given
        (pickled messages, or codes this engine holds as objects), or not (codes: the core
        reads them as masks)."""
        cdef const unsigned char[::1] data = view
        cdef BatchInfo_ info = self.core.get().batch_info(&data[0], data.shape[0])
        cdef vector[uint64_t] words
        cdef size_t k
        if info.pickled:
            try:
                values = pickle.loads(view[info.pickled_at:])
            except Exception as exc:
                raise ValueError(f"a damaged batch: its messages do not unpickle ({exc})") from None
            if type(values) is not list or len(values) != info.messages:
                raise ValueError("a damaged batch: its pickled messages are not its list of messages")
            for value in values:
                ids.push_back(MessageId(self._message(value)))
            return True
        if not self.native_model:  # codes, held here as objects
            words = self.core.get().batch_messages(&data[0], data.shape[0])
            for k in range(info.messages):
                ids.push_back(MessageId(self._message(self._int(&words[k * self.width]))))
            return True
        return False

    def take_improvements(self):
        """The improvements found since the last call."""
        cdef vector[Improvement_] found = self.core.get().take_improvements()
        cdef size_t k
        return [Improvement(found[k].iteration, found[k].seconds, found[k].cost,
                            (None if found[k].link == NO_LINK else found[k].link, *self._py_masks(found[k].joins)))
                for k in range(found.size())]

    def take_notices(self):
        """The records this shard dominated since the last call (with ``notify``)."""
        return list(self.core.get().take_notices())

    def keep_log(self):
        """From now on, log every expansion and every record dominated here (:class:`WorkLog`)."""
        self.core.get().keep_log()

    def take_log(self):
        """The log since :meth:`keep_log` or the last call (emptied; logging goes on)."""
        cdef WorkLog_ log = self.core.get().take_log()
        found = WorkLog()
        found.costs.frombytes(PyBytes_FromStringAndSize(<char*>log.costs.data(), log.costs.size() * 8))
        found.bounds.frombytes(PyBytes_FromStringAndSize(<char*>log.bounds.data(), log.bounds.size() * 8))
        found.links.frombytes(PyBytes_FromStringAndSize(<char*>log.links.data(), log.links.size() * 8))
        found.dominated.frombytes(PyBytes_FromStringAndSize(<char*>log.dominated.data(), log.dominated.size() * 8))
        found.arrived.frombytes(PyBytes_FromStringAndSize(<char*>log.arrived.data(), log.arrived.size()))
        return found

    def take_open(self):
        """Every queued branch still worth expanding, cheapest first, taken out."""
        return self._py_branches(self.core.get().take_open())

    def least_bound(self):
        """The least bound over every branch held here, outbox included (inf if none)."""
        return self.core.get().least_bound()

    def open_count(self):
        """Open branches held here (queue and active), not counting the outbox."""
        return self.core.get().open_count()

    def open_branches(self):
        """Every open branch held here (the active one first), without removing them."""
        return self._py_branches(self.core.get().open_branches())

    def final_entry(self):
        """The link table's entry of the complete mappings, if this engine's shard holds it."""
        cdef Entry_ found
        if self.core.get().final_entry(&found):
            return Entry(found.best, found.record)
        return None

    def lookup(self, records):
        """The histories of those of ``records`` that this engine's shard holds."""
        cdef string run
        found = {}
        for record in records:
            if type(record) is int and 0 <= record < (1 << 63) and self.core.get().histories(record, &run):
                found[record] = bytes(run)
        return found

    # -- for tests and benchmarks ----------------------------------------------------------------
    def link_key(self, branch):
        """The link key of a branch, made by the core (search/keys.py's tuple)."""
        return self._py_key(self.core.get().key_of(self._branch(branch)))

    def route(self, key, shards):
        """The shard that owns ``key`` (search/linking.py's route), computed by the core."""
        return self.core.get().route(self._key(key), shards)

    def footprint(self):
        """What the core holds, by structure: ``{name: (items, bytes)}`` (open branches, link
        records, histories, dominated, bound memo, cost memo, other memos, values)."""
        cdef Footprint f = self.core.get().footprint()
        return {"open branches": (f.open_branches, f.queue), "link records": (f.link_records, f.link_table),
                "histories": (f.histories_count, f.histories), "dominated": (f.dominated_count, f.dominated),
                "bound memo": (f.bound_entries, f.bound_memo), "cost memo": (f.cost_entries, f.cost_memo),
                "other memos": (0, f.other_memos), "values": (f.values_count, f.values),
                "of which masks": (f.masks_count, f.masks), "of which sequences": (f.seqs_count, f.seqs)}


def _rebuild(definition, alpha, seed, owner, shard_index, shards, notify, share, iterations, g_min, random_state):
    engine = NativeEngine(rebuilt(definition), alpha, seed, owner, shard_index, shards, notify)
    engine.restore(SearchState(), iterations, g_min, random_state)
    engine.load_share(share)
    return engine


cdef bytes _sealed(const string& body, bytes pickled):
    """A batch from the core's ``body`` (CRC 0) and its pickled messages, with its CRC
    (search/batches.py's sealed, without its copies)."""
    cdef Py_ssize_t size = body.size() + len(pickled)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, size)
    cdef char* at = PyBytes_AS_STRING(out)
    memcpy(at, body.data(), body.size())
    if len(pickled):
        memcpy(at + body.size(), <const char*>pickled, len(pickled))
    cdef uint32_t crc = zlib.crc32(memoryview(out)[CHECKED_FROM:])
    memcpy(at + 8, &crc, 4)  # little-endian, as the core writes (batch.hpp)
    return out

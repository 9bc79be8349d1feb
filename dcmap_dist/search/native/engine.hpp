// The native engine's face to its binding (search/native_engine.pyx): one abstract class,
// the same for every mask width, and make_engine() choosing the width for the network
// (1, 2, 4 or 8 words: up to 512 nodes). Values cross as typed ids (ids.hpp) and plain
// words; branches, keys and arrivals as the records of branch.hpp and vocabulary.hpp; the
// built-in model as model_tables.hpp's record. Nothing here knows Python (search/core.py
// is the Python side of this face: docs/engine.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "batch.hpp"
#include "branch.hpp"
#include "explorer.hpp"
#include "ids.hpp"
#include "model_tables.hpp"
#include "vocabulary.hpp"

namespace dcmap {

struct CoreTopology {  // model/topology.py's tables, masks as `words` little-endian words each
    int n = 0;
    int l_max = 0;
    std::vector<int> layer;
    std::vector<uint64_t> parents, children, neighbours, anc, desc;  // n masks each
    std::vector<uint64_t> layer_mask, above;                        // l_max + 1 masks each
};

struct CoreOptions {
    bool single_scheme = false;
    bool full_keys = false;
    bool has_estimator = false;
    double alpha = 0.6;
    bool has_owner = false;  // it holds a shard of the link table, its records numbered as `owner`'s
    int64_t owner = 0;
    int shard_index = 0;
    int shards = 1;
    bool notify = false;
};

struct OutBatch {  // one destination's batch: its bytes (CRC 0, without pickled messages) and messages
    int owner;
    std::string bytes;
    std::vector<MessageId> messages;  // the binding's ids, for it to pickle after the bytes (not coded)
    size_t rows;
};

struct BatchInfo {  // what the binding needs of a batch before it is received
    bool pickled;
    size_t pickled_at;
    uint32_t messages, rows;
};

struct Footprint {  // bytes held by each structure, and how many items it holds
    size_t values, values_count;       // interned masks, items, sequences and long masks
    size_t masks, masks_count, seqs, seqs_count;  // of which masks and sequences
    size_t cost_memo, cost_entries;
    size_t bound_memo, bound_entries;
    size_t other_memos;                // node-set facts, reach, estimates
    size_t link_table, link_records;   // keys and entries
    size_t histories, histories_count;
    size_t queue, open_branches;       // queued branches, their entries and heaps
    size_t dominated, dominated_count;
};

class EngineBase {
   public:
    virtual ~EngineBase() = default;
    virtual int words() const = 0;

    // values
    virtual MaskId mask(const uint64_t* words) = 0;
    virtual void mask_words(MaskId mask, uint64_t* out) const = 0;
    virtual ItemId item(MaskId members, MessageId message) = 0;
    virtual void item_of(ItemId item, MaskId* members, MessageId* message) const = 0;
    virtual SeqId mask_seq(const std::vector<MaskId>& masks) = 0;
    virtual SeqId item_seq(const std::vector<ItemId>& items) = 0;
    virtual std::vector<MaskId> masks_of(SeqId seq) const = 0;
    virtual std::vector<ItemId> items_of(SeqId seq) const = 0;
    virtual BigMaskId bigmask(std::vector<uint64_t> words) = 0;
    virtual std::vector<uint64_t> bigmask_of(BigMaskId id) const = 0;
    virtual MaskId zero_mask() const = 0;
    virtual SeqId empty_seq() const = 0;

    // counters and state
    virtual int64_t iterations() const = 0;
    virtual double g_min() const = 0;
    virtual size_t link_records() const = 0;
    virtual bool has_shard() const = 0;
    virtual void set_counters(int64_t iterations, double g_min, double seconds) = 0;
    virtual void set_random_state(const std::vector<uint32_t>& words, uint32_t position) = 0;
    virtual std::vector<uint32_t> random_state() const = 0;  // 624 words, then the position
    virtual void hear(double g_min) = 0;
    virtual void add_dominated(int64_t record) = 0;
    virtual void place(int64_t iterations, double seconds, bool has_clock, double clock_start) = 0;

    // the search
    virtual void start(const Branch& first, const Branch& root) = 0;
    // a Reason's code; -1 when a callback raised (the binding raises its exception)
    virtual int step(double until, int64_t max_iterations, int64_t watch_max, bool has_clock,
                     double clock_start) = 0;
    virtual bool offer(const Key& key, const Branch& branch, Branch* survivor) = 0;
    virtual void receive(const std::vector<Arrival>& arrivals) = 0;
    virtual void adopt(const Branch& branch) = 0;
    virtual void load_entry(const Key& key, double best, int64_t record) = 0;
    virtual void load_histories(int64_t record, const std::string& run) = 0;
    virtual Key key_of(const Branch& branch) = 0;
    virtual int route(const Key& key, int shards) const = 0;

    // what it hands out
    virtual std::vector<std::pair<int, std::vector<Arrival>>> take_outbox() = 0;
    // The outbox as one batch per owner (batch.hpp; `coded`: messages are mask ids), emptied.
    virtual std::vector<OutBatch> take_batches(bool coded) = 0;
    // A batch's layout, checked (std::invalid_argument names what is wrong).
    virtual BatchInfo batch_info(const uint8_t* data, size_t size) const = 0;
    // The codes of a batch's messages, `words()` words each, for a binding that holds them as objects.
    virtual std::vector<uint64_t> batch_messages(const uint8_t* data, size_t size) const = 0;
    // Settles a batch's arrivals (`message_ids`: the binding's ids of its messages, or null: coded);
    // with `settle` false, only reads them (their values interned): what reading costs.
    virtual size_t receive_batch(const uint8_t* data, size_t size, const std::vector<MessageId>* message_ids,
                                 bool settle) = 0;
    virtual std::vector<Improvement> take_improvements() = 0;
    virtual std::vector<int64_t> take_notices() = 0;
    // The log of its work (explorer.hpp's WorkLog): kept from keep_log on; take_log empties it.
    virtual void keep_log() = 0;
    virtual WorkLog take_log() = 0;
    virtual std::vector<Branch> take_open() = 0;
    virtual std::vector<Branch> open_branches() const = 0;
    virtual double least_bound() const = 0;
    virtual size_t open_count() const = 0;
    virtual bool final_entry(Entry* out) const = 0;
    virtual std::vector<std::pair<Key, Entry>> entries() const = 0;
    virtual std::vector<int64_t> history_ids() = 0;
    virtual bool histories(int64_t record, std::string* out) = 0;
    virtual std::vector<int64_t> dominated_records() const = 0;
    // This engine's share of a snapshot as one buffer (batch.hpp, a share; its CRC left 0),
    // taken between steps (what export gives: the outbox is not in it); `messages` gets
    // the binding's ids of its messages, for it to pickle after the bytes (not `coded`).
    virtual std::string take_share(bool coded, std::vector<MessageId>* messages) = 0;
    // Takes over a share (what load takes: link entries and histories into its shard,
    // dominated records, open branches); its messages as for receive_batch.
    virtual void load_share(const uint8_t* data, size_t size, const std::vector<MessageId>* message_ids) = 0;
    virtual Footprint footprint() const = 0;
    // The built-in model runs natively from now on (a network of one component only: its
    // messages are node masks, held as mask ids).
    virtual void use_model(const ModelTables& tables) = 0;
    virtual uint64_t collections() const = 0;  // of the store's sequences: ids changed each time
    virtual void collect() = 0;                 // collects the store's sequences now
};

template <int W>
class Engine final : public EngineBase {
   public:
    using Mask = Bits<W>;

    Engine(const CoreTopology& data, const CoreOptions& o, const Oracle& oracle)
        : x_(topology(data), o.single_scheme ? Scheme::SINGLE : Scheme::MERGE, o.full_keys, o.has_estimator, oracle,
             o.alpha, o.has_owner ? std::optional<int64_t>(o.owner) : std::nullopt, o.shard_index, o.shards,
             o.notify) {}

    int words() const override { return W; }

    MaskId mask(const uint64_t* words) override {
        Mask m;
        for (int k = 0; k < W; ++k) m.w[k] = words[k];
        return store().mask(m);
    }
    void mask_words(MaskId mask, uint64_t* out) const override {
        check(mask, store().masks.size());
        const Mask& m = store().mask(mask);
        for (int k = 0; k < W; ++k) out[k] = m.w[k];
    }
    ItemId item(MaskId members, MessageId message) override {
        check(members, store().masks.size());
        return store().item(members, message);
    }
    void item_of(ItemId item, MaskId* members, MessageId* message) const override {
        check(item, store().items.size());
        *members = store().items[item].members;
        *message = store().items[item].message;
    }
    SeqId mask_seq(const std::vector<MaskId>& masks) override { return store().seq(masks); }
    SeqId item_seq(const std::vector<ItemId>& items) override { return store().seq(items); }
    std::vector<MaskId> masks_of(SeqId seq) const override {
        check(seq, store().seqs.size());
        IdSpan<MaskId> s = store().masks_of(seq);
        return std::vector<MaskId>(s.begin(), s.end());
    }
    std::vector<ItemId> items_of(SeqId seq) const override {
        check(seq, store().seqs.size());
        IdSpan<ItemId> s = store().items_of(seq);
        return std::vector<ItemId>(s.begin(), s.end());
    }
    BigMaskId bigmask(std::vector<uint64_t> words) override { return store().bigmask(words); }
    std::vector<uint64_t> bigmask_of(BigMaskId id) const override {
        check(id, store().words.size());
        auto s = store().bigmask(id);
        return std::vector<uint64_t>(s.begin(), s.end());
    }
    MaskId zero_mask() const override { return store().zero_mask; }
    SeqId empty_seq() const override { return store().empty_seq; }

    int64_t iterations() const override { return x_.iterations(); }
    double g_min() const override { return x_.g_min(); }
    size_t link_records() const override { return x_.link_records(); }
    bool has_shard() const override { return x_.has_shard(); }
    void set_counters(int64_t iterations, double g_min, double seconds) override {
        x_.set_counters(iterations, g_min, seconds);
    }
    void set_random_state(const std::vector<uint32_t>& words, uint32_t position) override {
        if (words.size() != PythonRandom::N) throw std::invalid_argument("a random state of 624 words expected");
        std::array<uint32_t, PythonRandom::N> state;
        std::copy(words.begin(), words.end(), state.begin());
        x_.rng.set_state(state, position);
    }
    std::vector<uint32_t> random_state() const override {
        std::vector<uint32_t> out(x_.rng.words().begin(), x_.rng.words().end());
        out.push_back(x_.rng.position());
        return out;
    }
    void hear(double g_min) override { x_.hear(g_min); }
    void add_dominated(int64_t record) override { x_.add_dominated(record); }
    void place(int64_t iterations, double seconds, bool has_clock, double clock_start) override {
        x_.place(iterations, seconds, has_clock ? std::optional<double>(clock_start) : std::nullopt);
    }

    void start(const Branch& first, const Branch& root) override {
        check_branch(first);
        check_branch(root);
        x_.start(first, root);
    }
    int step(double until, int64_t max_iterations, int64_t watch_max, bool has_clock, double clock_start) override {
        try {
            return static_cast<int>(x_.step(until, max_iterations, watch_max,
                                            has_clock ? std::optional<double>(clock_start) : std::nullopt));
        } catch (const CallbackFailed&) {
            return -1;
        }
    }
    bool offer(const Key& key, const Branch& branch, Branch* survivor) override {
        check_branch(branch);
        std::optional<Branch> got = x_.offer(key, branch);
        if (got) *survivor = *got;
        return got.has_value();
    }
    void receive(const std::vector<Arrival>& arrivals) override {
        for (const Arrival& a : arrivals) check_branch(a.branch);
        x_.receive(arrivals);
    }
    void adopt(const Branch& branch) override {
        check_branch(branch);
        if (branch.layer_done())  // an open branch stands inside a layer; a completion must be linked first
            throw std::invalid_argument("an open branch whose layer is complete (a completion, not linked)");
        x_.adopt(branch);
    }
    void load_entry(const Key& key, double best, int64_t record) override {
        if (!x_.has_shard()) return;  // the table is another actor's
        x_.shard()->load(key, Entry{best, record}, x_.problem.store);
    }
    void load_histories(int64_t record, const std::string& run) override {
        if (!x_.has_shard()) return;
        std::lock_guard<std::mutex> guard(x_.histories_lock);
        x_.shard()->histories().add_run(record, reinterpret_cast<const uint8_t*>(run.data()), run.size());
    }
    Key key_of(const Branch& branch) override {
        check_branch(branch);
        return x_.keys.of(branch);
    }
    int route(const Key& key, int shards) const override { return x_.keys.route(key, shards); }

    std::vector<std::pair<int, std::vector<Arrival>>> take_outbox() override { return x_.take_outbox(); }
    std::vector<OutBatch> take_batches(bool coded) override {
        std::vector<OutBatch> out;
        for (const auto& [owner, arrivals] : x_.take_outbox()) {
            BatchWriter<W> writer(store(), x_.problem.topo.n, coded);
            for (const Arrival& a : arrivals) writer.add(a);
            OutBatch batch{owner, std::string(writer.size(), '\0'), writer.messages(), writer.rows()};
            writer.write(reinterpret_cast<uint8_t*>(batch.bytes.data()));
            out.push_back(std::move(batch));
        }
        return out;
    }
    BatchInfo batch_info(const uint8_t* data, size_t size) const override {
        BatchReader r = reader(data, size);
        return BatchInfo{r.pickled(), r.pickled_at(), r.messages(), r.rows()};
    }
    std::vector<uint64_t> batch_messages(const uint8_t* data, size_t size) const override {
        std::vector<uint64_t> words = reader(data, size).message_words();
        const size_t width = static_cast<size_t>(batch_width(x_.problem.topo.n));
        std::vector<uint64_t> out(words.size() / width * W, 0);
        for (size_t k = 0; k < words.size() / width; ++k)
            std::copy_n(words.begin() + k * width, width, out.begin() + k * W);
        return out;
    }
    size_t receive_batch(const uint8_t* data, size_t size, const std::vector<MessageId>* message_ids,
                         bool settle) override {
        std::vector<Arrival> arrivals = reader(data, size).arrivals(store(), message_ids);
        if (settle) receive(arrivals);
        return arrivals.size();
    }
    std::vector<Improvement> take_improvements() override { return x_.take_improvements(); }
    std::vector<int64_t> take_notices() override { return x_.take_notices(); }
    void keep_log() override { x_.keep_log(); }
    WorkLog take_log() override {
        if (!x_.has_log()) throw std::invalid_argument("no log is kept: call keep_log first");
        return x_.take_log();
    }
    std::vector<Branch> take_open() override { return x_.take_open(); }
    std::vector<Branch> open_branches() const override { return x_.open_branches(); }
    double least_bound() const override { return x_.least_bound(); }
    size_t open_count() const override { return x_.open_count(); }
    bool final_entry(Entry* out) const override {
        if (!x_.has_shard()) return false;
        const Entry* e = x_.shard()->find(x_.keys.final_key);
        if (e) *out = *e;
        return e != nullptr;
    }
    std::vector<std::pair<Key, Entry>> entries() const override {
        std::vector<std::pair<Key, Entry>> out;
        if (!x_.has_shard()) return out;
        const LinkShard<W>& shard = *x_.shard();
        out.reserve(shard.size());
        for (size_t at = 0; at < shard.size(); ++at) out.push_back({shard.key(at), shard.entry(at)});
        return out;
    }
    std::vector<int64_t> history_ids() override {
        if (!x_.has_shard()) return {};
        std::lock_guard<std::mutex> guard(x_.histories_lock);
        return x_.shard()->histories().ids();
    }
    bool histories(int64_t record, std::string* out) override {
        if (!x_.has_shard()) return false;
        std::lock_guard<std::mutex> guard(x_.histories_lock);
        const HistoryTable& table = x_.shard()->histories();
        if (!table.contains(record)) return false;
        *out = table.get(record);
        return true;
    }
    std::vector<int64_t> dominated_records() const override { return x_.dominated().records(); }
    std::string take_share(bool coded, std::vector<MessageId>* messages) override {
        BatchWriter<W> writer(store(), x_.problem.topo.n, coded);
        for (const auto& [key, entry] : entries()) writer.add_entry(key, entry);
        for (const Branch& b : x_.open_branches()) writer.add_open(b);
        std::vector<std::pair<int64_t, std::string>> runs;
        for (int64_t record : history_ids()) {
            runs.emplace_back(record, std::string());
            if (!histories(record, &runs.back().second)) throw std::logic_error("a record's histories went missing");
        }
        writer.set_share(dominated_records(), runs);
        std::string out(writer.size(), '\0');
        writer.write(reinterpret_cast<uint8_t*>(out.data()));
        *messages = writer.messages();
        return out;
    }
    void load_share(const uint8_t* data, size_t size, const std::vector<MessageId>* message_ids) override {
        BatchReader::Share share = reader(data, size).share(store(), message_ids);
        for (const auto& [key, entry] : share.entries) load_entry(key, entry.best, entry.record);
        for (const auto& [record, run] : share.histories) load_histories(record, run);
        for (int64_t record : share.dominated) add_dominated(record);
        for (const Branch& b : share.open) adopt(b);
    }
    uint64_t collections() const override { return x_.collections(); }
    void use_model(const ModelTables& tables) override { x_.problem.use_model(tables); }
    void collect() override { x_.collect(); }
    Footprint footprint() const override {
        const Explorer<W>& x = x_;
        const Store<W>& s = store();
        const Problem<W>& p = x.problem;
        size_t table = x.has_shard() ? x.shard()->bytes() : 0;
        size_t histories = x.has_shard() ? x.shard()->histories().bytes() : 0;
        Footprint f{};
        f.values = s.bytes();
        f.values_count = s.masks.size() + s.items.size() + s.seqs.size() + s.words.size();
        f.masks = s.masks.bytes();
        f.masks_count = s.masks.size();
        f.seqs = s.seqs.bytes();
        f.seqs_count = s.seqs.size();
        f.cost_memo = p.cost_memo_bytes();
        f.cost_entries = p.cost_entries();
        f.bound_memo = p.bound_memo_bytes();
        f.bound_entries = p.bound_entries();
        f.other_memos = p.estimate_memo_bytes() + p.facts.bytes() + x.keys.bytes();
        f.link_table = table - histories;
        f.link_records = x.link_records();
        f.histories = histories;
        f.histories_count = x.has_shard() ? x.shard()->histories().size() : 0;
        f.queue = x.queue_bytes();
        f.open_branches = x.open_count();
        f.dominated = x.dominated().bytes();
        f.dominated_count = x.dominated().size();
        return f;
    }

   private:
    Explorer<W> x_;

    Store<W>& store() { return x_.problem.store; }
    const Store<W>& store() const { return x_.problem.store; }

    BatchReader reader(const uint8_t* data, size_t size) const {
        return BatchReader(data, size, x_.problem.topo.n, x_.problem.topo.l_max, x_.keys.full());
    }

    template <class IdT>
    static void check(IdT id, size_t size) {
        if (id.value() >= size) throw std::out_of_range("an id the engine never gave");
    }
    // a branch made by the binding from Python values: every id its engine's, its layer in range
    void check_branch(const Branch& b) const {
        if (b.layer < 0 || b.layer > x_.problem.topo.l_max) throw std::invalid_argument("a branch's layer out of range");
        if (b.assigned != LAYER_DONE) check(b.assigned, store().masks.size());
        check(b.comps, store().seqs.size());
        check(b.frontier, store().seqs.size());
        check(b.fixed, store().masks.size());
        check(b.joins, store().seqs.size());
    }

    static Topology<W> topology(const CoreTopology& d) {
        if (d.n < 1 || d.n > 64 * W) throw std::invalid_argument("the network does not fit the engine's masks");
        size_t n = static_cast<size_t>(d.n), layers = static_cast<size_t>(d.l_max) + 1;
        if (d.l_max < 0 || d.layer.size() != n || d.parents.size() != n * W || d.children.size() != n * W ||
            d.neighbours.size() != n * W || d.anc.size() != n * W || d.desc.size() != n * W ||
            d.layer_mask.size() != layers * W || d.above.size() != layers * W)
            throw std::invalid_argument("topology tables of the wrong sizes");
        Topology<W> t;
        t.n = d.n;
        t.l_max = d.l_max;
        t.layer = d.layer;
        auto masks = [](const std::vector<uint64_t>& words, size_t count) {
            std::vector<Mask> out(count);
            for (size_t i = 0; i < count; ++i)
                for (int k = 0; k < W; ++k) out[i].w[k] = words[i * W + k];
            return out;
        };
        t.parents = masks(d.parents, n);
        t.children = masks(d.children, n);
        t.neighbours = masks(d.neighbours, n);
        t.anc = masks(d.anc, n);
        t.desc = masks(d.desc, n);
        t.layer_mask = masks(d.layer_mask, layers);
        t.above = masks(d.above, layers);
        return t;
    }
};

// The engine for a network of `n` nodes: the narrowest masks that hold it (up to 512 nodes).
inline std::unique_ptr<EngineBase> make_engine(const CoreTopology& data, const CoreOptions& options,
                                               const Oracle& oracle) {
    if (data.n <= 64) return std::make_unique<Engine<1>>(data, options, oracle);
    if (data.n <= 128) return std::make_unique<Engine<2>>(data, options, oracle);
    if (data.n <= 256) return std::make_unique<Engine<4>>(data, options, oracle);
    if (data.n <= 512) return std::make_unique<Engine<8>>(data, options, oracle);
    throw std::invalid_argument("the native engine takes networks of up to 512 nodes");
}

inline int words_for(int n) { return n <= 64 ? 1 : n <= 128 ? 2 : n <= 256 ? 4 : 8; }

}  // namespace dcmap

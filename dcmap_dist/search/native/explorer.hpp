// The DCMAP loop over one actor's open branches, step for step as
// search/explorer.py's Explorer runs it: the same pops (the same random draws), the same
// pruning, expansion, linking at completed layers and inside them (the same gates), the
// same outbox, improvements, notices and counters.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "branch.hpp"
#include "branch_queue.hpp"
#include "ids.hpp"
#include "keys.hpp"
#include "link_table.hpp"
#include "mt19937.hpp"
#include "problem.hpp"
#include "tolerance.hpp"
#include "vocabulary.hpp"

namespace dcmap {

inline double monotonic_seconds() {  // time.perf_counter() on Linux
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// search/worklog.py's WorkLog: each expansion's cost, bound and last link record; each
// record dominated here, and whether an arrival from another actor dominated it
struct WorkLog {
    std::vector<double> costs, bounds;
    std::vector<int64_t> links, dominated;
    std::vector<int8_t> arrived;
};

struct KeyHash {
    size_t operator()(const Key& k) const { return static_cast<size_t>(k.hash()); }
};

template <int W>
class Explorer {
   public:
    using Mask = Bits<W>;

    // search/explorer.py's constants
    static constexpr size_t SENT_MEMORY = size_t{1} << 18;
    static constexpr int64_t INSIDE_WINDOW = 256, INSIDE_YIELD = 4, INSIDE_REST = 16, INSIDE_REST_MOST = 1024;

    Explorer(Topology<W> topology, Scheme scheme, bool full_keys, bool has_estimator, const Oracle& oracle,
             double alpha, std::optional<int64_t> owner, int shard_index, int shards, bool notify)
        : problem(std::move(topology), scheme, has_estimator, oracle),
          keys(problem.store, problem.topo, problem.facts, full_keys), alpha_(alpha),
          shard_index_(shard_index), shards_(shards), notify_(notify) {
        if (owner) shard_ = std::make_unique<LinkShard<W>>(*owner);
    }

    Problem<W> problem;
    LinkKeys<W> keys;
    PythonRandom rng;
    std::mutex histories_lock;  // a lookup (another thread) against the step adding histories

    // -- counters and clock ---------------------------------------------------------
    int64_t iterations() const { return iterations_; }
    double g_min() const { return g_min_; }
    size_t link_records() const { return shard_ ? shard_->size() : 0; }
    bool has_shard() const { return shard_ != nullptr; }
    LinkShard<W>* shard() { return shard_.get(); }
    const LinkShard<W>* shard() const { return shard_.get(); }
    const DominatedSet& dominated() const { return dominated_; }

    void place(int64_t iterations, double seconds, std::optional<double> clock_start) {
        iteration_offset_ = iterations;
        time_offset_ = seconds;
        clock_start_ = clock_start;
    }
    void set_counters(int64_t iterations, double g_min, double seconds) {
        iterations_ = iterations;
        g_min_ = g_min;
        time_offset_ = seconds;
    }
    void hear(double g_min) { g_min_ = std::min(g_min_, g_min); }
    void add_dominated(int64_t record) { dominated_.add(record); }

    // -- arrivals -------------------------------------------------------------------
    // search/explorer.py's offer: the branch linked if it goes on
    std::optional<Branch> offer(const Key& key, const Branch& branch) {
        if (!shard_) throw std::logic_error("offer on an explorer without a shard of the link table");
        std::vector<MaskId>& joins = joins_;
        IdSpan<MaskId> held = problem.store.masks_of(branch.joins);
        joins.assign(held.begin(), held.end());
        typename LinkShard<W>::Decision d;
        {
            std::lock_guard<std::mutex> guard(histories_lock);
            d = shard_->settle(key, branch.cost, branch.link, joins, static_cast<uint64_t>(stamp()), dominated_,
                               problem.store);
        }
        for (int64_t old : d.dominated) {
            dominated_.add(old);
            if (notify_) notices_.push_back(old);
            if (log_) {
                log_->dominated.push_back(old);
                log_->arrived.push_back(arriving_ ? 1 : 0);
            }
        }
        if (d.outcome != Settled::NEW && d.outcome != Settled::CHEAPER) return std::nullopt;
        if (key == keys.final_key) {
            improve(branch.cost, branch.link, branch.joins);
            return std::nullopt;
        }
        return linked(branch, d.record);
    }

    void receive(const std::vector<Arrival>& arrivals) {
        struct Arriving {  // set while arrivals from another actor are settled (the log tells them apart)
            bool& flag;
            explicit Arriving(bool& f) : flag(f) { flag = true; }
            ~Arriving() { flag = false; }
        } arriving(arriving_);
        for (const Arrival& a : arrivals) {
            std::optional<Branch> survivor = offer(a.key, a.branch);
            if (survivor && within(survivor->bound, g_min_)) queue_.push(*survivor);
        }
    }
    void adopt(const Branch& branch) { queue_.push(branch); }

    void improve(double cost, int64_t link, SeqId joins) {
        if (!within(g_min_, cost)) {
            g_min_ = cost;
            improvements_.push_back(Improvement{stamp(), seconds(), cost, link, joins});
        }
    }

    void start(const Branch& first, const Branch& root) {
        improve(first.cost, first.link, first.joins);
        active_ = offer(keys.of(root), root);
    }

    // -- the loop -------------------------------------------------------------------
    // until: a time.perf_counter() deadline (NaN: none); max_iterations: this explorer's
    // own count it may reach (-1: none); watch_max: the stopwatch's iteration limit (-1: none)
    Reason step(double until, int64_t max_iterations, int64_t watch_max, std::optional<double> clock_start) {
        clock_start_ = clock_start;
        std::vector<Branch>& children = children_;
        std::vector<Branch>& survivors = survivors_;
        while (true) {
            if (problem.store.seqs.size() >= next_collection_) collect();
            if (max_iterations >= 0 && iterations_ >= max_iterations) return Reason::MAX_ITERATIONS;
            if (watch_max >= 0 && iterations_ >= watch_max) return Reason::MAX_ITERATIONS;
            if (turns_++ % 128 == 0) {
                Reason reason = problem.resources();
                if (reason != Reason::GOING) return reason;
            }
            if (!std::isnan(until) && monotonic_seconds() >= until) return Reason::BUDGET;
            Branch branch;
            if (active_) {
                branch = *active_;
                active_.reset();
            } else if (!queue_.pop(rng.random() < alpha_, branch)) {
                return Reason::IDLE;
            }
            if (dominated_.contains(branch.link) || !within(branch.bound, g_min_)) continue;
            ++iterations_;
            try {
                problem.expand(branch, problem.next_proposal(branch), g_min_, children);
            } catch (const Interrupted& stop) {
                --iterations_;
                queue_.push(branch);  // not expanded: it still stands for its mappings
                return static_cast<Reason>(stop.reason);
            }
            if (log_) {
                log_->costs.push_back(branch.cost);
                log_->bounds.push_back(branch.bound);
                log_->links.push_back(branch.link);
            }
            survivors.clear();
            for (const Branch& c : children) {
                std::optional<Branch> child;
                if (c.layer_done())
                    child = complete(c);
                else if (shard_)
                    child = link_inside(c);
                else
                    child = c;
                if (child) survivors.push_back(*child);
            }
            if (!survivors.empty()) {
                std::stable_sort(survivors.begin(), survivors.end(),
                                 [](const Branch& a, const Branch& b) { return a.estimate < b.estimate; });
                active_ = survivors[0];
                for (size_t k = 1; k < survivors.size(); ++k) queue_.push(survivors[k]);
            }
        }
    }

    // -- the log of its work (search/explorer.py's keep_log, take_log) ----------------
    void keep_log() { log_ = std::make_unique<WorkLog>(); }
    bool has_log() const { return log_ != nullptr; }
    WorkLog take_log() {
        WorkLog out = std::move(*log_);
        *log_ = WorkLog{};
        return out;
    }

    // -- figures and what it hands out -----------------------------------------------
    size_t open_count() const { return queue_.size() + (active_ ? 1 : 0); }

    double least_bound() const {
        double least = queue_.least_bound();
        if (active_) least = std::min(least, active_->bound);
        for (const auto& [owner, batch] : outbox_)
            for (const Arrival& a : batch) least = std::min(least, a.branch.bound);
        return least;
    }

    std::vector<Branch> open_branches() const {
        std::vector<Branch> out;
        if (active_) out.push_back(*active_);
        std::vector<Branch> queued = queue_.branches();
        out.insert(out.end(), queued.begin(), queued.end());
        return out;
    }

    std::vector<Branch> take_open() {
        std::vector<Branch> out;
        Branch b;
        while (queue_.pop(true, b))
            if (within(b.bound, g_min_) && !dominated_.contains(b.link)) out.push_back(b);
        return out;
    }

    // the outbox in the order its owners were first written to (a Python dict's order)
    std::vector<std::pair<int, std::vector<Arrival>>> take_outbox() {
        std::vector<std::pair<int, std::vector<Arrival>>> out = std::move(outbox_);
        outbox_.clear();
        return out;
    }
    std::vector<Improvement> take_improvements() {
        std::vector<Improvement> out = std::move(improvements_);
        improvements_.clear();
        return out;
    }
    std::vector<int64_t> take_notices() {
        std::vector<int64_t> out = std::move(notices_);
        notices_.clear();
        return out;
    }

    size_t queue_bytes() const { return queue_.bytes(); }
    uint64_t collections() const { return collections_; }

    // Drops the store's sequences nothing holds any longer (the components of the branches
    // expanded, the frontiers of the children pruned...) and renumbers the others wherever
    // they are held: their ids change, nothing else.
    void collect() {
        Store<W>& s = problem.store;
        std::vector<uint8_t> live(s.seqs.size(), 0);
        each_held_sequence([&](SeqId& seq) { live[seq.value()] = 1; });
        if (shard_) shard_->mark(live);
        problem.mark(live);
        std::vector<SeqId> renumbered = s.seqs.compact(live);
        each_held_sequence([&](SeqId& seq) { seq = renumbered[seq.value()]; });
        if (shard_) shard_->renumber(renumbered);
        problem.renumber(renumbered);
        sent_.clear();  // a filter only: what it forgets is sent again, and refused there
        ++collections_;
        next_collection_ = std::max<size_t>(2 * s.seqs.size(), FIRST_COLLECTION);
    }

   private:
    double alpha_;
    int shard_index_, shards_;
    bool notify_;
    std::unique_ptr<LinkShard<W>> shard_;
    DominatedSet dominated_;
    BranchQueue queue_;
    std::optional<Branch> active_;
    double g_min_ = std::numeric_limits<double>::infinity();
    int64_t iterations_ = 0;
    int64_t iteration_offset_ = 0;
    double time_offset_ = 0.0;
    std::optional<double> clock_start_;
    uint64_t turns_ = 0;
    static constexpr size_t FIRST_COLLECTION = size_t{1} << 17;  // sequences in the store
    size_t next_collection_ = FIRST_COLLECTION;
    uint64_t collections_ = 0;
    std::vector<Improvement> improvements_;
    std::vector<int64_t> notices_;
    std::vector<std::pair<int, std::vector<Arrival>>> outbox_;
    std::unordered_map<Key, double, KeyHash> sent_;
    std::unordered_map<int64_t, std::array<int64_t, 4>> gates_;
    std::vector<Branch> children_, survivors_;
    std::vector<MaskId> joins_;
    std::unique_ptr<WorkLog> log_;
    bool arriving_ = false;

    // Calls f on every sequence id held outside the tables (which mark and renumber their own).
    template <class F>
    void each_held_sequence(F&& f) {
        f(problem.store.empty_seq);
        queue_.each_branch([&](Branch& b) { each_sequence(b, f); });
        if (active_) each_sequence(*active_, f);
        for (auto& [owner, batch] : outbox_)
            for (Arrival& a : batch) {
                each_sequence(a.branch, f);
                each_sequence(a.key, f);
            }
        for (Improvement& found : improvements_) f(found.joins);
        each_sequence(keys.final_key, f);
    }

    int64_t stamp() const { return iteration_offset_ + iterations_; }
    double seconds() const { return time_offset_ + (clock_start_ ? monotonic_seconds() - *clock_start_ : 0.0); }

    Branch linked(const Branch& b, int64_t record) {
        if (is_complete(b))  // only the final key takes a complete mapping, and it is not linked
            throw std::invalid_argument("a complete mapping arrived at another key than the final one");
        Branch out = b;
        out.joins = problem.store.empty_seq;
        out.link = record;
        if (b.layer_done()) {  // moved to the start of the next layer
            out.layer = b.layer + 1;
            out.assigned = problem.store.zero_mask;
            out.fixed = problem.store.zero_mask;
        }
        return out;
    }

    bool is_complete(const Branch& b) const { return b.layer_done() && b.layer == problem.topo.l_max; }

    // search/explorer.py's _complete
    std::optional<Branch> complete(const Branch& b) {
        Key key = keys.of(b);
        if (is_complete(b)) improve(b.cost, b.link, b.joins);
        int owner = keys.route(key, shards_);
        if (shard_ && owner == shard_index_) return offer(key, b);
        auto sent = sent_.find(key);
        if (sent != sent_.end() && !within(b.cost, sent->second)) return std::nullopt;
        double best = sent != sent_.end() ? std::min(sent->second, b.cost) : b.cost;
        if (sent_.size() >= SENT_MEMORY) sent_.clear();
        sent_[key] = best;
        auto box = std::find_if(outbox_.begin(), outbox_.end(), [&](const auto& e) { return e.first == owner; });
        if (box == outbox_.end()) {
            outbox_.push_back({owner, {}});
            box = outbox_.end() - 1;
        }
        box->second.push_back(Arrival{key, b});
        return std::nullopt;
    }

    // search/explorer.py's _link_inside (its gates: settled and stopped in this trial,
    // branches left to skip, trials to skip next)
    std::optional<Branch> link_inside(const Branch& b) {
        int64_t point = (static_cast<int64_t>(b.layer) << 20) | problem.store.mask(b.assigned).count();
        auto found = gates_.find(point);
        if (found == gates_.end()) found = gates_.emplace(point, std::array<int64_t, 4>{0, 0, 0, INSIDE_REST}).first;
        std::array<int64_t, 4>& gate = found->second;
        if (gate[2]) {
            --gate[2];
            return b;
        }
        std::optional<Branch> survivor = offer(keys.of(b), b);
        ++gate[0];
        if (!survivor) ++gate[1];
        if (gate[0] == INSIDE_WINDOW) {
            if (gate[1] * INSIDE_YIELD < INSIDE_WINDOW) {
                gate[2] = INSIDE_WINDOW * gate[3];
                gate[3] = std::min(2 * gate[3], INSIDE_REST_MOST);
            } else {
                gate[3] = INSIDE_REST;
            }
            gate[0] = gate[1] = 0;
        }
        return survivor;
    }
};

}  // namespace dcmap

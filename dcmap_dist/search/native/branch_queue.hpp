// The open branches an explorer waits to expand (search/branch_queue.py's BranchQueue):
// reachable both by g_hat and by (layer, g_hat), in two kinds of binary heap whose
// entries are totally ordered by (g_hat, push number), so that the pops are the Python
// queue's, whatever the heaps' shapes. Popping a branch leaves its entry stale in the
// other heap, skipped when it comes up; the heaps are rebuilt from their live entries
// when stale ones outnumber them. Branches and entries live in arenas with free lists.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "branch.hpp"
#include "ids.hpp"

namespace dcmap {

class BranchQueue {
   public:
    using Slot = uint32_t;  // an index into its own arenas (NONE: none), not a store's id

    void push(const Branch& branch) {
        Slot slot = take(branches_, free_branches_, branch);
        QEntry entry{branch.estimate, ++seq_, slot, 2};
        Slot id = take(entries_, free_entries_, entry);
        by_cost_.push_back(id);
        std::push_heap(by_cost_.begin(), by_cost_.end(), later());
        size_t layer = static_cast<size_t>(branch.layer);
        if (by_layer_.size() <= layer) by_layer_.resize(layer + 1);
        by_layer_[layer].push_back(id);
        std::push_heap(by_layer_[layer].begin(), by_layer_[layer].end(), later());
        if (layer < lowest_) lowest_ = layer;
        ++layer_entries_;
        ++size_;
        if (static_cast<double>(by_cost_.size() + layer_entries_) > STALE_SHARE * size_ + STALE_FLOOR) compact();
    }

    // the cheapest g_hat (cheapest) or the lowest layer's cheapest; false if none
    bool pop(bool cheapest, Branch& out) {
        if (cheapest) return pop_live(by_cost_, out);
        while (lowest_ < by_layer_.size()) {
            std::vector<Slot>& heap = by_layer_[lowest_];
            size_t before = heap.size();
            bool found = pop_live(heap, out);
            layer_entries_ -= before - heap.size();
            if (found) return true;
            ++lowest_;
        }
        lowest_ = 0;
        return false;
    }

    size_t size() const { return size_; }

    // the queued branches, cheapest (g_hat, push number) first
    std::vector<Branch> branches() const {
        std::vector<Slot> live;
        for (Slot id : by_cost_)
            if (entries_[id].branch != NONE) live.push_back(id);
        std::sort(live.begin(), live.end(), [this](Slot a, Slot b) { return before(a, b); });
        std::vector<Branch> out;
        out.reserve(live.size());
        for (Slot id : live) out.push_back(branches_[entries_[id].branch]);
        return out;
    }

    // Calls f(branch) on every queued branch, which it may rewrite in place.
    template <class F>
    void each_branch(F&& f) {
        for (const QEntry& entry : entries_)
            if (entry.branch != NONE && entry.refs > 0) f(branches_[entry.branch]);
    }

    double least_bound() const {
        double least = std::numeric_limits<double>::infinity();
        for (Slot id : by_cost_)
            if (entries_[id].branch != NONE) least = std::min(least, branches_[entries_[id].branch].bound);
        return least;
    }

    size_t bytes() const {
        size_t total = branches_.capacity() * sizeof(Branch) + entries_.capacity() * sizeof(QEntry) +
                       (by_cost_.capacity() + free_branches_.capacity() + free_entries_.capacity()) * sizeof(Slot);
        for (const auto& heap : by_layer_) total += heap.capacity() * sizeof(Slot);
        return total;
    }

   private:
    static constexpr double STALE_SHARE = 2.5;
    static constexpr double STALE_FLOOR = 4096;

    struct QEntry {
        double g_hat;
        uint64_t seq;
        Slot branch;     // NONE once popped
        uint8_t refs;  // heaps that still hold it
    };
    std::vector<Branch> branches_;
    std::vector<Slot> free_branches_;
    std::vector<QEntry> entries_;
    std::vector<Slot> free_entries_;
    std::vector<Slot> by_cost_;
    std::vector<std::vector<Slot>> by_layer_;
    uint64_t seq_ = 0;
    size_t size_ = 0;
    size_t layer_entries_ = 0;
    size_t lowest_ = 0;

    template <class T>
    static Slot take(std::vector<T>& arena, std::vector<Slot>& free, const T& value) {
        if (!free.empty()) {
            Slot id = free.back();
            free.pop_back();
            arena[id] = value;
            return id;
        }
        arena.push_back(value);
        return static_cast<Slot>(arena.size() - 1);
    }

    bool before(Slot a, Slot b) const {
        const QEntry &x = entries_[a], &y = entries_[b];
        return x.g_hat < y.g_hat || (x.g_hat == y.g_hat && x.seq < y.seq);
    }
    struct Later {  // std heaps keep the greatest on top: order them the other way
        const BranchQueue* queue;
        bool operator()(Slot a, Slot b) const { return queue->before(b, a); }
    };
    Later later() const { return Later{this}; }

    void release(Slot id) {  // a heap let go of entry `id`
        if (--entries_[id].refs == 0) free_entries_.push_back(id);
    }

    bool pop_live(std::vector<Slot>& heap, Branch& out) {
        while (!heap.empty()) {
            std::pop_heap(heap.begin(), heap.end(), later());
            Slot id = heap.back();
            heap.pop_back();
            Slot slot = entries_[id].branch;
            entries_[id].branch = NONE;
            release(id);
            if (slot != NONE) {
                out = branches_[slot];
                free_branches_.push_back(slot);
                --size_;
                return true;
            }
        }
        return false;
    }

    void compact() {
        auto keep = [this](std::vector<Slot>& heap) {
            size_t kept = 0;
            for (Slot id : heap) {
                if (entries_[id].branch != NONE)
                    heap[kept++] = id;
                else
                    release(id);
            }
            heap.resize(kept);
            std::make_heap(heap.begin(), heap.end(), later());
        };
        keep(by_cost_);
        for (auto& heap : by_layer_) keep(heap);
        layer_entries_ = by_cost_.size();
    }
};

}  // namespace dcmap

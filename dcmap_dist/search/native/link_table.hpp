// The link table (search/linking.py's LinkShard): per key the best cost and the record of
// that arrival, each arrival decided new, cheaper, tie or worse with SPEC's tolerance, its
// history kept in the record's histories, an arrival that a strictly cheaper record of
// its frame with fewer limits dominates worse, and a new record dominating the strictly
// dearer records of its frame with more limits (frames.hpp); and the set of dominated
// records, a bit per record serial, owner by owner.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "bits.hpp"
#include "branch.hpp"
#include "frames.hpp"
#include "histories.hpp"
#include "ids.hpp"
#include "store.hpp"
#include "tables.hpp"
#include "tolerance.hpp"

namespace dcmap {

enum class Settled { NEW, CHEAPER, TIE, WORSE };

// The records known to be dominated: a bit per serial, per owner.
class DominatedSet {
   public:
    bool contains(int64_t record) const {
        if (record < 0) return false;
        auto found = bits_.find(record >> SERIAL_BITS);
        if (found == bits_.end()) return false;
        uint64_t serial = static_cast<uint64_t>(record & SERIAL_MASK);
        return serial / 64 < found->second.size() && (found->second[serial / 64] >> (serial % 64)) & 1;
    }
    void add(int64_t record) {
        if (record < 0) return;
        std::vector<uint64_t>& bits = bits_[record >> SERIAL_BITS];
        uint64_t serial = static_cast<uint64_t>(record & SERIAL_MASK);
        if (serial / 64 >= bits.size()) bits.resize(serial / 64 + 1 + bits.size() / 2, 0);
        if (!((bits[serial / 64] >> (serial % 64)) & 1)) ++count_;
        bits[serial / 64] |= uint64_t{1} << (serial % 64);
    }
    size_t size() const { return count_; }
    std::vector<int64_t> records() const {
        std::vector<int64_t> out;
        for (const auto& [owner, bits] : bits_)
            for (size_t k = 0; k < bits.size(); ++k)
                for (uint64_t x = bits[k]; x; x &= x - 1)
                    out.push_back(record_id(owner, static_cast<int64_t>(64 * k + std::countr_zero(x))));
        return out;
    }
    size_t bytes() const {
        size_t total = 0;
        for (const auto& [owner, bits] : bits_) total += bits.capacity() * 8;
        return total;
    }

   private:
    std::map<int64_t, std::vector<uint64_t>> bits_;
    size_t count_ = 0;
};

template <int W>
class LinkShard {
   public:
    explicit LinkShard(int64_t owner) : owner_(owner) {}

    struct Decision {
        Settled outcome;
        int64_t record;                       // the new record (new, cheaper), else the existing one
        std::span<const int64_t> dominated;  // the records the new one dominates (valid until the next settle)
    };

    // an arrival at `key` of cost `cost` whose trail is (`link`, masks `joins`), at
    // `iteration`; a new record dominates, in order, the key's old one (cheaper) and the
    // strictly dearer records of its frame with more limits not in `known` (frames.hpp)
    Decision settle(const Key& key, double cost, int64_t link, std::span<const MaskId> joins, uint64_t iteration,
                    const DominatedSet& known, const Store<W>& store) {
        Entry* entry = entries_.find(key);
        dominated_.clear();
        if (entry != nullptr) {
            if (within(entry->best, cost)) {  // not cheaper
                if (within(cost, entry->best)) {
                    histories_.add(entry->record, history(iteration, link, joins, store));
                    entry->best = std::min(entry->best, cost);
                    return {Settled::TIE, entry->record, {}};
                }
                return {Settled::WORSE, entry->record, {}};
            }
            dominated_.push_back(entry->record);
        }
        const int64_t own = entry != nullptr ? static_cast<int64_t>(entries_.position(entry)) : -1;
        const typename Frames<W>::Probe probe = Frames<W>::probe(key, store);
        int64_t cheaper = frames_.rivals(
            key, probe, store, [&](uint32_t at) -> const Key& { return entries_.key(at); },
            [&](uint32_t at) { return !within(cost, entries_.value(at).best); },
            [&](uint32_t at) {
                const Entry& theirs = entries_.value(at);
                return !within(theirs.best, cost) && static_cast<int64_t>(at) != own && !known.contains(theirs.record);
            },
            dearer_);
        if (cheaper >= 0) return {Settled::WORSE, entries_.value(static_cast<size_t>(cheaper)).record, {}};
        const bool replaced = !dominated_.empty();
        for (uint32_t at : dearer_) dominated_.push_back(entries_.value(at).record);
        int64_t record = record_id(owner_, ++serial_);
        entries_.at(key, Entry{cost, record}) = Entry{cost, record};
        if (entry == nullptr) frames_.add(entries_.size() - 1, probe);
        histories_.add(record, history(iteration, link, joins, store));
        return {replaced ? Settled::CHEAPER : Settled::NEW, record, dominated_};
    }

    // a record loaded from a checkpoint or a snapshot (its histories come apart)
    void load(const Key& key, Entry entry, const Store<W>& store) {
        size_t before = entries_.size();
        entries_.at(key, entry) = entry;
        if (entries_.size() > before) frames_.add(before, Frames<W>::probe(key, store));
    }

    const Entry* find(const Key& key) const { return entries_.find(key); }
    void mark(std::vector<uint8_t>& live) const {
        for (size_t at = 0; at < entries_.size(); ++at) {
            Key k = entries_.key(at);
            each_sequence(k, [&](SeqId& seq) { live[seq.value()] = 1; });
        }
    }
    void renumber(const std::vector<SeqId>& renumbered) {
        entries_.rewrite_keys([&](Key k) {
            each_sequence(k, [&](SeqId& seq) { seq = renumbered[seq.value()]; });
            return k;
        });
    }
    size_t size() const { return entries_.size(); }
    const Key& key(size_t at) const { return entries_.key(at); }  // in order of first arrival
    const Entry& entry(size_t at) const { return entries_.value(at); }
    HistoryTable& histories() { return histories_; }
    const HistoryTable& histories() const { return histories_; }
    size_t bytes() const { return entries_.bytes() + frames_.bytes() + histories_.bytes(); }

   private:
    int64_t owner_;
    int64_t serial_ = 0;
    FlatMap<Key, Entry> entries_;
    Frames<W> frames_;  // the lean records by frame
    HistoryTable histories_;
    HistoryWriter writer_;
    std::vector<uint32_t> dearer_;    // settle's: the positions of the dearer records of an arrival's frame
    std::vector<int64_t> dominated_;  // settle's: the records the last new one dominates

    const std::string& history(uint64_t iteration, int64_t link, std::span<const MaskId> joins, const Store<W>& store) {
        writer_.begin(iteration, link);
        for (MaskId mask : joins) writer_.join(store.mask(mask).w.data(), W);
        return writer_.finish();
    }
};

}  // namespace dcmap

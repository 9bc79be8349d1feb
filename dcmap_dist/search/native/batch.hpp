// The batches of completions that cross between the actors of a distributed search
// (docs/distributed.md, "Batches"; search/batches.py reads and writes the same bytes):
// one little-endian buffer per destination. The values a batch's rows name are in
// dictionaries of the batch's own distinct masks, messages, items, sequences and long
// masks (values, not a process's ids), then fixed-size rows of (key, branch):
//
//   header (56 bytes)   magic "DCMB", version u16, flags u16, CRC-32 u32 of every byte after
//                       it, width u32 (words per mask), then u32 counts: rows, masks,
//                       messages, items, mask sequences and their pool, item sequences and
//                       their pool, long masks and their pool
//   masks               width u64 words each
//   long masks' pool    u64 words (a key's blocked pairs, without trailing zero words)
//   rows                88 bytes each (Row)
//   messages            u32 each: an index into the masks (the built-in model's codes);
//                       none when pickled (flag 1), the pickled list ends the batch instead
//   items               u32 pairs (mask index, message index)
//   mask sequences      u32 lengths, then their pool of mask indices
//   item sequences      u32 lengths, then their pool of item indices
//   long masks          u32 lengths (of the pool's words)
//   share's tail        flag 2 only: u64 its length, then u64 count and i64 dominated records,
//                       u64 count and per record i64 id, u64 length and its histories' bytes
//   pickled messages    flag 1 only: the rest of the batch (the binding writes and reads it)
//
// A row's key parts are its kind's (branch.hpp's KEY_PARTS: search/keys.py's tuple after
// the layer, in order), each an index into the dictionary of what the part is; a kind's
// unused parts are 0.
//
// A worker's share of a snapshot (flag 2: the core's own, never sent to another actor's
// search) is written in the same format, and read, here (BatchWriter::set_share,
// BatchReader::share): its rows are its link entries (the key; the branch's cost is the
// entry's best cost, its link the entry's record, the rest empty) and its open branches
// (key kind OPEN_BRANCH, no key), its dominated records and histories in the tail.
//
// The CRC is the binding's (zlib's, as Python's zlib.crc32): the reader here checks every
// count, index and value, so that a batch that passes its CRC and is still wrong (another
// version, another network, or made to be wrong) is refused, never trusted.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bits.hpp"
#include "branch.hpp"
#include "ids.hpp"
#include "store.hpp"
#include "tables.hpp"
#include "vocabulary.hpp"

namespace dcmap {

static_assert(std::endian::native == std::endian::little, "batches are written as the machine's own words");

constexpr uint16_t BATCH_VERSION = 1;
constexpr uint16_t MESSAGES_PICKLED = 1;
constexpr uint16_t SHARE = 2;  // a worker's share of a snapshot, not completions
constexpr int32_t OPEN_BRANCH = 4;  // a share's row of an open branch: a key kind of no key
constexpr size_t BATCH_HEADER = 56;
constexpr size_t CHECKED_FROM = 12;  // the CRC covers the batch from here on

struct Row {  // an arrival's key and branch, as indices into the batch's dictionaries
    double cost, estimate, bound;
    int64_t link;
    int32_t key_layer, key_kind;
    uint32_t parts[6];  // the key's parts (KEY_PARTS of its kind), as indices; unused parts 0
    int32_t layer;
    uint32_t assigned, comps, frontier, joins, fixed;  // assigned: NONE once the layer is complete
};
static_assert(sizeof(Row) == 88, "a row is 88 bytes");

struct BatchCounts {
    uint32_t rows = 0, masks = 0, messages = 0, items = 0, mask_seqs = 0, mask_pool = 0, item_seqs = 0,
             item_pool = 0, longs = 0, long_pool = 0;
};

inline int batch_width(int n) { return (n + 63) / 64; }

// The batch indices given to one kind of value: a process's id (IdT) -> its index in the batch.
template <class IdT>
class BatchIndex {
   public:
    uint32_t find(IdT id) const {
        if (slots_.empty()) return NONE;
        for (size_t at = mix64(id.value()) & (slots_.size() - 1);; at = (at + 1) & (slots_.size() - 1)) {
            if (slots_[at].index == NONE) return NONE;
            if (slots_[at].id == id) return slots_[at].index;
        }
    }
    uint32_t add(IdT id) {  // an id find() did not find: its index, the next one
        if ((ids_.size() + 1) * 2 > slots_.size()) grow();
        uint32_t index = static_cast<uint32_t>(ids_.size());
        put(id, index);
        ids_.push_back(id);
        return index;
    }
    const std::vector<IdT>& ids() const { return ids_; }

   private:
    struct Slot {
        IdT id;
        uint32_t index;
    };
    std::vector<Slot> slots_;
    std::vector<IdT> ids_;

    void put(IdT id, uint32_t index) {
        for (size_t at = mix64(id.value()) & (slots_.size() - 1);; at = (at + 1) & (slots_.size() - 1))
            if (slots_[at].index == NONE) {
                slots_[at] = Slot{id, index};
                return;
            }
    }
    void grow() {
        slots_.assign(std::max<size_t>(16, slots_.size() * 2), Slot{IdT(0), NONE});
        for (size_t k = 0; k < ids_.size(); ++k) put(ids_[k], static_cast<uint32_t>(k));
    }
};

// One destination's batch, written from arrivals whose ids are `store`'s; its messages are
// mask ids (`coded`: the built-in model in the core) or the binding's ids, pickled by it.
template <int W>
class BatchWriter {
   public:
    BatchWriter(const Store<W>& store, int n, bool coded) : store_(&store), width_(batch_width(n)), coded_(coded) {}

    void add(const Arrival& a) {
        Row r = key_row(a.key);
        branch_into(r, a.branch);
        rows_.push_back(r);
    }
    // A share's rows: an open branch (no key), a link entry (its key, best cost and record).
    void add_open(const Branch& b) {
        Row r{};
        r.key_kind = OPEN_BRANCH;
        branch_into(r, b);
        rows_.push_back(r);
    }
    void add_entry(const Key& key, const Entry& e) {
        Row r = key_row(key);
        Branch empty;
        empty.cost = e.best;
        empty.link = e.record;
        empty.layer = key.layer;
        empty.assigned = LAYER_DONE;
        empty.comps = empty.frontier = empty.joins = store_->empty_seq;
        empty.fixed = store_->zero_mask;
        branch_into(r, empty);
        rows_.push_back(r);
    }
    // Makes the batch a share, with its tail: the dominated records, then each record's
    // histories (record, its histories' bytes).
    void set_share(const std::vector<int64_t>& dominated,
                   const std::vector<std::pair<int64_t, std::string>>& histories) {
        share_ = true;
        tail_.clear();
        auto put = [this](uint64_t v) { tail_.append(reinterpret_cast<const char*>(&v), 8); };
        put(dominated.size());
        for (int64_t record : dominated) put(static_cast<uint64_t>(record));
        put(histories.size());
        for (const auto& [record, run] : histories) {
            put(static_cast<uint64_t>(record));
            put(run.size());
            tail_ += run;
        }
    }

    bool pickled() const { return !coded_; }
    // the binding's message ids, in the batch's order (pickled batches)
    const std::vector<MessageId>& messages() const { return messages_.ids(); }
    size_t rows() const { return rows_.size(); }

    size_t size() const {  // without the pickled messages
        const BatchCounts c = counts();
        return BATCH_HEADER + 8 * (size_t{c.masks} * width_ + c.long_pool) + sizeof(Row) * c.rows +
               4 * (size_t{coded_ ? c.messages : 0} + 2 * size_t{c.items} + c.mask_seqs + c.mask_pool + c.item_seqs +
                    c.item_pool + c.longs) +
               (share_ ? 8 + tail_.size() : 0);
    }

    // Writes the batch (its CRC left 0 for the binding) into `out`, size() bytes.
    void write(uint8_t* out) const {
        const BatchCounts c = counts();
        std::memset(out, 0, BATCH_HEADER);
        std::memcpy(out, "DCMB", 4);
        put16(out + 4, BATCH_VERSION);
        put16(out + 6, static_cast<uint16_t>((coded_ ? 0 : MESSAGES_PICKLED) | (share_ ? SHARE : 0)));
        uint32_t header[11] = {static_cast<uint32_t>(width_), c.rows, c.masks, c.messages, c.items, c.mask_seqs,
                               c.mask_pool, c.item_seqs, c.item_pool, c.longs, c.long_pool};
        std::memcpy(out + 12, header, sizeof(header));
        uint8_t* at = out + BATCH_HEADER;
        for (MaskId id : masks_.ids()) at = put(at, store_->mask(id).w.data(), width_);
        for (BigMaskId id : longs_.ids()) {
            auto words = store_->bigmask(id);
            at = put(at, words.data(), words.size());
        }
        at = put(at, rows_.data(), rows_.size());
        if (coded_) at = put(at, message_masks_.data(), message_masks_.size());
        at = put(at, items_data_.data(), items_data_.size());
        at = put(at, mask_lengths_.data(), mask_lengths_.size());
        at = put(at, mask_pool_.data(), mask_pool_.size());
        at = put(at, item_lengths_.data(), item_lengths_.size());
        at = put(at, item_pool_.data(), item_pool_.size());
        for (BigMaskId id : longs_.ids()) {
            uint32_t length = static_cast<uint32_t>(store_->bigmask(id).size());
            at = put(at, &length, 1);
        }
        if (share_) {
            uint64_t length = tail_.size();
            at = put(at, &length, 1);
            put(at, tail_.data(), tail_.size());
        }
    }

   private:
    const Store<W>* store_;
    int width_;
    bool coded_;
    bool share_ = false;
    std::string tail_;
    BatchIndex<MaskId> masks_;
    BatchIndex<MessageId> messages_;
    BatchIndex<ItemId> items_;
    BatchIndex<SeqId> mask_seqs_, item_seqs_;
    BatchIndex<BigMaskId> longs_;
    std::vector<Row> rows_;
    std::vector<uint32_t> message_masks_, items_data_, mask_lengths_, mask_pool_, item_lengths_, item_pool_;
    size_t long_pool_ = 0;

    // the key's parts in their order (KEY_PARTS), each into its dictionary (the order the
    // values are first met in: search/batches.py's)
    Row key_row(const Key& k) {
        Row r{};
        r.key_layer = k.layer;
        r.key_kind = static_cast<int32_t>(k.kind());
        const auto& parts = parts_of(k.kind());
        for (int j = 0; j < 6; ++j) {
            switch (parts[j]) {
                case KeyPart::ASSIGNED:
                case KeyPart::FIXED:
                case KeyPart::HELD: r.parts[j] = mask(MaskId(k.word(j))); break;
                case KeyPart::ITEMS: r.parts[j] = item_seq(SeqId(k.word(j))); break;
                case KeyPart::MASKS: r.parts[j] = mask_seq(SeqId(k.word(j))); break;
                case KeyPart::BLOCKED: r.parts[j] = long_mask(BigMaskId(k.word(j))); break;
                case KeyPart::NONE: break;
            }
        }
        return r;
    }
    void branch_into(Row& r, const Branch& b) {
        r.cost = b.cost;
        r.estimate = b.estimate;
        r.bound = b.bound;
        r.link = b.link;
        r.layer = b.layer;
        r.assigned = b.layer_done() ? NONE : mask(b.assigned);
        r.comps = mask_seq(b.comps);
        r.frontier = item_seq(b.frontier);
        r.joins = mask_seq(b.joins);
        r.fixed = mask(b.fixed);
    }

    BatchCounts counts() const {
        BatchCounts c;
        c.rows = static_cast<uint32_t>(rows_.size());
        c.masks = static_cast<uint32_t>(masks_.ids().size());
        c.messages = static_cast<uint32_t>(messages_.ids().size());
        c.items = static_cast<uint32_t>(items_.ids().size());
        c.mask_seqs = static_cast<uint32_t>(mask_lengths_.size());
        c.mask_pool = static_cast<uint32_t>(mask_pool_.size());
        c.item_seqs = static_cast<uint32_t>(item_lengths_.size());
        c.item_pool = static_cast<uint32_t>(item_pool_.size());
        c.longs = static_cast<uint32_t>(longs_.ids().size());
        c.long_pool = static_cast<uint32_t>(long_pool_);
        return c;
    }

    uint32_t mask(MaskId id) {
        uint32_t at = masks_.find(id);
        return at != NONE ? at : masks_.add(id);
    }
    uint32_t message(MessageId id) {
        uint32_t at = messages_.find(id);
        if (at != NONE) return at;
        if (coded_) message_masks_.push_back(mask(message_mask(id)));  // its mask first, as search/batches.py visits it
        return messages_.add(id);
    }
    uint32_t item(ItemId id) {
        uint32_t at = items_.find(id);
        if (at != NONE) return at;
        const Item& value = store_->items[id];
        uint32_t members = mask(value.members);
        uint32_t said = message(value.message);
        items_data_.push_back(members);
        items_data_.push_back(said);
        return items_.add(id);
    }
    uint32_t mask_seq(SeqId id) {
        return sequence(id, store_->masks_of(id), mask_seqs_, mask_lengths_, mask_pool_, &BatchWriter::mask);
    }
    uint32_t item_seq(SeqId id) {
        return sequence(id, store_->items_of(id), item_seqs_, item_lengths_, item_pool_, &BatchWriter::item);
    }
    // the index of sequence `id` (its members `seq`) in `index`: its members first (`member`)
    template <class T>
    uint32_t sequence(SeqId id, IdSpan<T> seq, BatchIndex<SeqId>& index, std::vector<uint32_t>& lengths,
                      std::vector<uint32_t>& pool, uint32_t (BatchWriter::*member)(T)) {
        uint32_t at = index.find(id);
        if (at != NONE) return at;
        for (T m : seq) pool.push_back((this->*member)(m));
        lengths.push_back(static_cast<uint32_t>(seq.size()));
        return index.add(id);
    }
    uint32_t long_mask(BigMaskId id) {
        uint32_t at = longs_.find(id);
        if (at != NONE) return at;
        long_pool_ += store_->bigmask(id).size();
        return longs_.add(id);
    }

    static void put16(uint8_t* at, uint16_t v) { std::memcpy(at, &v, 2); }
    template <class T>
    static uint8_t* put(uint8_t* at, const T* data, size_t count) {
        if (count) std::memcpy(at, data, count * sizeof(T));
        return at + count * sizeof(T);
    }
};

// A batch's sections, read and checked against the search's shape (n nodes, l_max, the
// kind of its keys): every count against the batch's length, every index against its
// dictionary, every mask within the nodes. std::invalid_argument names what is wrong.
class BatchReader {
   public:
    BatchReader(const uint8_t* data, size_t size, int n, int l_max, bool full_keys)
        : data_(data), size_(size), n_(n), l_max_(l_max), full_keys_(full_keys) {
        if (size < BATCH_HEADER || std::memcmp(data, "DCMB", 4) != 0) fail("it is not a dcmap batch");
        uint16_t version, flags;
        std::memcpy(&version, data + 4, 2);
        std::memcpy(&flags, data + 6, 2);
        if (version != BATCH_VERSION)
            fail("it is of format version " + std::to_string(version) + ", this dcmap reads version " +
                 std::to_string(BATCH_VERSION));
        if (flags > (MESSAGES_PICKLED | SHARE)) fail("unknown flags " + std::to_string(flags));
        pickled_ = flags & MESSAGES_PICKLED;
        share_ = flags & SHARE;
        uint32_t header[11];
        std::memcpy(header, data + 12, sizeof(header));
        width_ = header[0];
        if (width_ != static_cast<uint32_t>(batch_width(n)))
            fail("its masks are of " + std::to_string(width_) + " words, this search's of " +
                 std::to_string(batch_width(n)) + " (a batch of another network)");
        c_ = BatchCounts{header[1], header[2], header[3], header[4], header[5],
                         header[6], header[7], header[8], header[9], header[10]};
        at_ = BATCH_HEADER;
        masks_ = take(size_t{c_.masks} * width_ * 8);
        long_pool_ = take(size_t{c_.long_pool} * 8);
        rows_ = take(size_t{c_.rows} * sizeof(Row));
        messages_ = take(pickled_ ? 0 : size_t{c_.messages} * 4);
        items_ = take(size_t{c_.items} * 8);
        mask_lengths_ = take(size_t{c_.mask_seqs} * 4);
        mask_pool_ = take(size_t{c_.mask_pool} * 4);
        item_lengths_ = take(size_t{c_.item_seqs} * 4);
        item_pool_ = take(size_t{c_.item_pool} * 4);
        long_lengths_ = take(size_t{c_.longs} * 4);
        if (share_) {
            uint64_t length;
            std::memcpy(&length, data + take(8), 8);
            tail_ = take(length);
            tail_size_ = length;
        }
        if (!pickled_ && at_ != size_) fail("it has " + std::to_string(size_ - at_) + " bytes past its end");
    }

    bool pickled() const { return pickled_; }
    bool share() const { return share_; }
    size_t pickled_at() const { return at_; }  // where the pickled messages begin
    uint32_t messages() const { return c_.messages; }
    uint32_t rows() const { return c_.rows; }

    // The batch's arrivals with `store`'s ids; `message_ids`: the binding's id of each of
    // the batch's messages (pickled batches, or codes for a store that holds them as objects),
    // or null: each message is the id of its mask in `store`.
    template <int W>
    std::vector<Arrival> arrivals(Store<W>& store, const std::vector<MessageId>* message_ids) const {
        if (share_) fail("it is a worker's share of a snapshot, not completions");
        std::vector<Arrival> out;
        rows(store, message_ids, out, nullptr);
        return out;
    }

    // A worker's share of a snapshot (see the top), in the order of its rows and its tail.
    struct Share {
        std::vector<std::pair<Key, Entry>> entries;  // its link entries
        std::vector<Branch> open;                    // its open branches
        std::vector<int64_t> dominated;              // its dominated records
        std::vector<std::pair<int64_t, std::string>> histories;  // (record, its histories' bytes)
    };
    template <int W>
    Share share(Store<W>& store, const std::vector<MessageId>* message_ids) const {
        if (!share_) fail("it is a batch of completions, not a worker's share");
        std::vector<Arrival> rows_read;
        std::vector<uint8_t> open;
        rows(store, message_ids, rows_read, &open);
        Share out;
        for (size_t k = 0; k < rows_read.size(); ++k) {
            const Arrival& a = rows_read[k];
            if (open[k])
                out.open.push_back(a.branch);
            else
                out.entries.push_back({a.key, Entry{a.branch.cost, a.branch.link}});
        }
        share_tail(&out.dominated, &out.histories);
        return out;
    }

   private:
    // A share's dominated records and histories (record, its histories' bytes).
    void share_tail(std::vector<int64_t>* dominated, std::vector<std::pair<int64_t, std::string>>* histories) const {
        size_t at = 0;
        auto take_u64 = [&]() {
            if (tail_size_ - at < 8) fail("its share's tail is shorter than its counts say");
            uint64_t v;
            std::memcpy(&v, data_ + tail_ + at, 8);
            at += 8;
            return v;
        };
        uint64_t count = take_u64();
        if (count > (tail_size_ - at) / 8) fail("its share's tail is shorter than its counts say");
        dominated->resize(count);
        for (uint64_t k = 0; k < count; ++k) (*dominated)[k] = static_cast<int64_t>(take_u64());
        count = take_u64();
        for (uint64_t k = 0; k < count; ++k) {
            int64_t record = static_cast<int64_t>(take_u64());
            uint64_t length = take_u64();
            if (record < 0) fail("a negative record in its share's tail");
            if (length > tail_size_ - at) fail("its share's tail is shorter than its counts say");
            histories->emplace_back(record, std::string(reinterpret_cast<const char*>(data_ + tail_ + at), length));
            at += length;
        }
        if (at != tail_size_) fail("its share's tail has bytes past its end");
    }

    // The rows into `out`; `open` (a share's): whether each is an open branch's (no key).
    template <int W>
    void rows(Store<W>& store, const std::vector<MessageId>* message_ids, std::vector<Arrival>& out,
              std::vector<uint8_t>* open) const {
        if (message_ids && message_ids->size() != c_.messages)
            fail("the messages given are not the batch's");
        if (!message_ids && pickled_) fail("its messages are pickled, and none were given");
        std::vector<MaskId> masks(c_.masks);
        std::vector<MessageId> messages(c_.messages);
        std::vector<ItemId> items(c_.items);
        std::vector<SeqId> mask_seqs(c_.mask_seqs), item_seqs(c_.item_seqs);
        std::vector<BigMaskId> longs(c_.longs);
        std::vector<bool> zero(c_.masks), holds_zero(c_.mask_seqs);
        const int top_bits = n_ - 64 * (static_cast<int>(width_) - 1);
        const uint64_t beyond = top_bits == 64 ? 0 : ~((uint64_t{1} << top_bits) - 1);
        for (uint32_t k = 0; k < c_.masks; ++k) {
            Bits<W> m{};
            std::memcpy(m.w.data(), data_ + masks_ + size_t{k} * width_ * 8, width_ * 8);
            if (m.w[width_ - 1] & beyond) fail("a mask names nodes the network does not have");
            zero[k] = m.none();
            masks[k] = store.mask(m);
        }
        for (uint32_t k = 0; k < c_.messages; ++k)
            messages[k] =
                message_ids ? (*message_ids)[k] : coded_message(masks[index(messages_, k, c_.masks, "a message")]);
        for (uint32_t k = 0; k < c_.items; ++k) {
            uint32_t members = index(items_, 2 * size_t{k}, c_.masks, "an item's mask");
            if (zero[members]) fail("a frontier cluster-layer of no nodes");
            items[k] = store.item(masks[members], messages[index(items_, 2 * size_t{k} + 1, c_.messages, "an item's message")]);
        }
        std::vector<MaskId> mask_ids;
        size_t pool = 0;
        for (uint32_t k = 0; k < c_.mask_seqs; ++k) {
            uint32_t length = u32(mask_lengths_, k);
            if (length > c_.mask_pool - pool) fail("its mask sequences overrun their pool");
            mask_ids.clear();
            for (uint32_t j = 0; j < length; ++j) {
                uint32_t m = index(mask_pool_, pool++, c_.masks, "a sequence's mask");
                holds_zero[k] = holds_zero[k] || zero[m];
                mask_ids.push_back(masks[m]);
            }
            mask_seqs[k] = store.seq(mask_ids);
        }
        if (pool != c_.mask_pool) fail("its mask sequences do not fill their pool");
        pool = 0;
        std::vector<ItemId> item_ids;
        for (uint32_t k = 0; k < c_.item_seqs; ++k) {
            uint32_t length = u32(item_lengths_, k);
            if (length > c_.item_pool - pool) fail("its item sequences overrun their pool");
            item_ids.clear();
            for (uint32_t j = 0; j < length; ++j)
                item_ids.push_back(items[index(item_pool_, pool++, c_.items, "a sequence's item")]);
            item_seqs[k] = store.seq(item_ids);
        }
        if (pool != c_.item_pool) fail("its item sequences do not fill their pool");
        pool = 0;
        std::vector<uint64_t> words;
        for (uint32_t k = 0; k < c_.longs; ++k) {
            uint32_t length = u32(long_lengths_, k);
            if (length > c_.long_pool - pool) fail("its long masks overrun their pool");
            words.resize(length);
            if (length) std::memcpy(words.data(), data_ + long_pool_ + pool * 8, size_t{length} * 8);
            if (length && words.back() == 0) fail("a long mask with a trailing zero word");
            pool += length;
            longs[k] = store.bigmask(words);
        }
        if (pool != c_.long_pool) fail("its long masks do not fill their pool");

        out.resize(c_.rows);
        if (open) open->assign(c_.rows, 0);
        for (uint32_t k = 0; k < c_.rows; ++k) {
            Row r;
            std::memcpy(&r, data_ + rows_ + size_t{k} * sizeof(Row), sizeof(Row));
            if (std::isnan(r.cost) || std::isnan(r.estimate) || std::isnan(r.bound))
                fail("a branch's costs must be numbers, not nan");
            if (r.link < -1) fail("a branch's link record is negative");
            if (r.layer < 0 || r.layer > l_max_) fail("a branch's layer out of range");
            auto in = [&](const auto& dict, uint32_t at, const char* what) {
                if (at >= dict.size()) fail(std::string(what) + " index out of range");
                return dict[at];
            };
            const uint32_t* p = r.parts;
            if (share_ && r.key_kind == OPEN_BRANCH) {
                if (r.key_layer) fail("an open branch's row with a key");
                for (int j = 0; j < 6; ++j)
                    if (p[j]) fail("a link key with parts its kind has not");
                (*open)[k] = 1;
            } else {
                const int32_t code = r.key_kind;
                if (code < 0 || code > 3 || (code >= static_cast<int32_t>(KeyKind::FULL_DONE)) != full_keys_)
                    fail("a link key of another kind than this search's");
                const KeyKind kind = static_cast<KeyKind>(code);
                const bool lean = kind == KeyKind::LEAN_DONE || kind == KeyKind::LEAN_INSIDE;
                std::array<uint32_t, 6> words{};
                for (int j = 0; j < 6; ++j) {
                    switch (parts_of(kind)[j]) {
                        case KeyPart::ASSIGNED:
                        case KeyPart::FIXED:
                        case KeyPart::HELD: words[j] = in(masks, p[j], "a key's mask").value(); break;
                        case KeyPart::ITEMS:
                            words[j] = in(item_seqs, p[j], lean ? "a key's items" : "a key's frontier").value();
                            break;
                        case KeyPart::MASKS:
                            words[j] = in(mask_seqs, p[j], lean ? "a key's shape" : "a key's components").value();
                            break;
                        case KeyPart::BLOCKED: words[j] = in(longs, p[j], "a key's blocked pairs").value(); break;
                        case KeyPart::NONE:
                            if (p[j]) fail("a link key with parts its kind has not");
                            break;
                    }
                }
                out[k].key = Key::of_words(r.key_layer, kind, words);
            }
            Branch& b = out[k].branch;
            b.cost = r.cost, b.estimate = r.estimate, b.bound = r.bound, b.link = r.link, b.layer = r.layer;
            b.assigned = r.assigned == NONE ? LAYER_DONE : in(masks, r.assigned, "a branch's assigned nodes");
            if (r.comps >= c_.mask_seqs || holds_zero[r.comps] || r.joins >= c_.mask_seqs || holds_zero[r.joins])
                fail("a branch's components or joins out of range or empty");
            b.comps = mask_seqs[r.comps];
            b.joins = mask_seqs[r.joins];
            b.frontier = in(item_seqs, r.frontier, "a branch's frontier");
            b.fixed = in(masks, r.fixed, "a branch's fixed mask");
        }
    }

   public:
    // The masks of the batch's messages (its codes: for a store that holds them as objects).
    std::vector<uint64_t> message_words() const {
        if (pickled_) fail("its messages are pickled");
        std::vector<uint64_t> out(size_t{c_.messages} * width_);
        for (uint32_t k = 0; k < c_.messages; ++k)
            std::memcpy(out.data() + size_t{k} * width_,
                        data_ + masks_ + size_t{index(messages_, k, c_.masks, "a message")} * width_ * 8, width_ * 8);
        return out;
    }

   private:
    const uint8_t* data_;
    size_t size_;
    int n_, l_max_;
    bool full_keys_;
    bool pickled_ = false;
    bool share_ = false;
    uint32_t width_ = 0;
    BatchCounts c_;
    size_t tail_ = 0, tail_size_ = 0;  // a share's tail: where it begins, its length
    size_t at_ = 0;
    size_t masks_ = 0, long_pool_ = 0, rows_ = 0, messages_ = 0, items_ = 0, mask_lengths_ = 0, mask_pool_ = 0,
           item_lengths_ = 0, item_pool_ = 0, long_lengths_ = 0;

    [[noreturn]] static void fail(const std::string& why) { throw std::invalid_argument("a damaged batch: " + why); }

    size_t take(size_t bytes) {
        if (bytes > size_ - at_) fail("it is shorter than its counts say");
        size_t start = at_;
        at_ += bytes;
        return start;
    }
    uint32_t u32(size_t section, size_t k) const {
        uint32_t v;
        std::memcpy(&v, data_ + section + 4 * k, 4);
        return v;
    }
    uint32_t index(size_t section, size_t k, uint32_t count, const char* what) const {
        uint32_t v = u32(section, k);
        if (v >= count) fail(std::string(what) + " index out of range");
        return v;
    }
};

}  // namespace dcmap

// The tied histories of a shard's link records, in the byte format of
// dcmap_dist/search/histories.py (history(), HistoryTable): a record's histories read back
// as the same bytes whichever engine wrote them, so outcomes, checkpoints and the listing
// of optimal mappings read them unchanged.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <map>
#include <vector>

namespace dcmap {

constexpr int SERIAL_BITS = 36;
constexpr int64_t SERIAL_MASK = (int64_t{1} << SERIAL_BITS) - 1;

inline int64_t record_id(int64_t owner, int64_t serial) { return (owner << SERIAL_BITS) | serial; }

inline void put_varint(std::string& out, uint64_t value) {
    while (value >= 0x80) {
        out.push_back(static_cast<char>((value & 0x7F) | 0x80));
        value >>= 7;
    }
    out.push_back(static_cast<char>(value));
}

inline int byte_length(uint64_t value) {
    int n = 0;
    while (value) {
        ++n;
        value >>= 8;
    }
    return n;
}

// One history: its iteration, the record its trail starts from (-1: the root) and the
// trail's join masks, each as little-endian bytes without trailing zeros.
class HistoryWriter {
   public:
    void begin(uint64_t iteration, int64_t record) {
        body_.clear();
        uint64_t stored = record < 0 ? 0 : static_cast<uint64_t>(record) + 1;
        int isz = byte_length(iteration), rsz = byte_length(stored);
        body_.push_back(static_cast<char>(isz | (rsz << 4)));
        for (int k = 0; k < isz; ++k) body_.push_back(static_cast<char>((iteration >> (8 * k)) & 0xFF));
        for (int k = 0; k < rsz; ++k) body_.push_back(static_cast<char>((stored >> (8 * k)) & 0xFF));
    }
    void join(const uint64_t* words, int count) {  // a mask of `count` words
        int top = count - 1;
        while (top >= 0 && words[top] == 0) --top;
        int length = top < 0 ? 0 : 8 * top + byte_length(words[top]);
        put_varint(body_, static_cast<uint64_t>(length));
        for (int b = 0; b < length; ++b) body_.push_back(static_cast<char>((words[b >> 3] >> (8 * (b & 7))) & 0xFF));
    }
    // the whole history: its length (a varint), then its body
    const std::string& finish() {
        out_.clear();
        put_varint(out_, body_.size());
        out_ += body_;
        return out_;
    }

   private:
    std::string body_, out_;
};

// A shard's histories: one store of bytes, each history after the offset of its record's
// previous one (int64 little-endian, -1 for the first); per owner, the offset of each
// serial's last history (-1: none). The store grows by an eighth, as Python's bytearray
// does, not by doubling: it is the largest of the search's structures.
class HistoryTable {
   public:
    void add(int64_t record, const std::string& history) {
        if (record < 0) throw std::invalid_argument("record ids are not negative");
        int64_t owner = record >> SERIAL_BITS, serial = record & SERIAL_MASK;
        std::vector<int64_t>& last = last_[owner];
        if (static_cast<size_t>(serial) >= last.size()) last.resize(serial + 1, -1);
        int64_t previous = last[serial];
        if (previous < 0) ++records_;
        ++histories_;
        int64_t at = static_cast<int64_t>(store_.size());
        size_t needed = store_.size() + 8 + history.size();
        if (needed > store_.capacity()) store_.reserve(std::max(needed, store_.capacity() + store_.capacity() / 8));
        char head[8];
        std::memcpy(head, &previous, 8);  // little-endian, as struct '<q' (x86-64 and ARM64)
        store_.insert(store_.end(), head, head + 8);
        store_.insert(store_.end(), history.begin(), history.end());
        last[serial] = at;
    }
    // Adds a run of histories, one after another (as histories_of splits them).
    void add_run(int64_t record, const uint8_t* run, size_t size) {
        size_t at = 0;
        while (at < size) {
            size_t end = history_end(run, size, at);
            add(record, std::string(reinterpret_cast<const char*>(run + at), end - at));
            at = end;
        }
    }
    bool contains(int64_t record) const { return last_of(record) >= 0; }
    // the record's histories, oldest first, one after another
    std::string get(int64_t record) const {
        std::vector<std::pair<int64_t, int64_t>> pieces;
        for (int64_t at = last_of(record); at >= 0;) {
            int64_t start = at + 8;
            pieces.push_back({start, static_cast<int64_t>(history_end(store_.data(), store_.size(), start))});
            std::memcpy(&at, store_.data() + at, 8);
        }
        std::string out;
        for (auto it = pieces.rbegin(); it != pieces.rend(); ++it)
            out.append(reinterpret_cast<const char*>(store_.data() + it->first), it->second - it->first);
        return out;
    }
    size_t records() const { return records_; }
    size_t size() const { return histories_; }  // histories of every record
    size_t bytes() const {
        size_t total = store_.capacity();
        for (const auto& [owner, last] : last_) total += last.capacity() * 8;
        return total;
    }
    // every record id held, owner by owner, serials ascending
    std::vector<int64_t> ids() const {
        std::vector<int64_t> out;
        for (const auto& [owner, last] : last_)
            for (size_t serial = 0; serial < last.size(); ++serial)
                if (last[serial] >= 0) out.push_back(record_id(owner, static_cast<int64_t>(serial)));
        return out;
    }

    // Where the history that starts at `at` of a run ends (std::invalid_argument if it
    // runs past the end: a damaged run).
    static size_t history_end(const uint8_t* run, size_t size, size_t at) {
        uint64_t length = 0;
        int shift = 0;
        while (true) {
            if (at >= size || shift > 63) throw std::invalid_argument("a history runs past its end");
            uint8_t byte = run[at++];
            length |= static_cast<uint64_t>(byte & 0x7F) << shift;
            if (byte < 0x80) break;
            shift += 7;
        }
        if (length > size - at) throw std::invalid_argument("a history runs past its end");
        return at + length;
    }

   private:
    std::vector<uint8_t> store_;
    std::map<int64_t, std::vector<int64_t>> last_;  // owner -> offsets, owners ascending
    size_t records_ = 0;
    size_t histories_ = 0;

    int64_t last_of(int64_t record) const {
        if (record < 0) return -1;
        auto found = last_.find(record >> SERIAL_BITS);
        if (found == last_.end()) return -1;
        size_t serial = static_cast<size_t>(record & SERIAL_MASK);
        return serial < found->second.size() ? found->second[serial] : -1;
    }
};

}  // namespace dcmap

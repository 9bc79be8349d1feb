// The ids the core hands out, one type per kind of value, in the manner of Fast Downward's
// StateID: a mask id, an item id, a sequence id, a message id and a long-mask id are each a
// uint32_t inside, made from one only explicitly, read with value(), compared with each
// other only within a kind. Passing an item id where a mask id is expected does not compile.
// none() is each kind's "no value" (all ones; never handed out, the tables refuse 2^32 - 1 ids).
//
// A sequence's ids are kept as raw words in one arena (tables.hpp's SeqInterner): IdSpan
// reads them back as ids of the kind the sequence holds (its use says which: store.hpp).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <span>
#include <type_traits>

namespace dcmap {

constexpr uint32_t NONE = 0xFFFFFFFFu;  // a raw word's "no value" (a table's slot, a batch's index)

template <class Kind>
class TypedId {
   public:
    constexpr TypedId() = default;
    constexpr explicit TypedId(uint32_t value) : value_(value) {}
    static constexpr TypedId none() { return TypedId(NONE); }

    constexpr uint32_t value() const { return value_; }
    constexpr bool is_none() const { return value_ == NONE; }
    constexpr bool operator==(const TypedId&) const = default;
    constexpr auto operator<=>(const TypedId&) const = default;

   private:
    uint32_t value_ = 0;
};

struct MaskKind;     // a node or component mask (store.hpp's masks)
struct ItemKind;     // a frontier cluster-layer: (members, message)
struct SeqKind;      // a sequence of mask ids or of item ids
struct MessageKind;  // a message: the binding's id of its value, or (the built-in model) its mask's id
struct BigMaskKind;  // a mask of any length (a key's blocked pairs)

using MaskId = TypedId<MaskKind>;
using ItemId = TypedId<ItemKind>;
using SeqId = TypedId<SeqKind>;
using MessageId = TypedId<MessageKind>;
using BigMaskId = TypedId<BigMaskKind>;

static_assert(sizeof(MaskId) == sizeof(uint32_t) && std::is_trivially_copyable_v<MaskId>,
              "an id is its word: a sequence of ids is copied as words");

// The raw word of an id (or of a plain word): what the generic tables hash and compare.
constexpr uint32_t raw(uint32_t word) { return word; }
constexpr uint64_t raw(uint64_t word) { return word; }
template <class Kind>
constexpr uint32_t raw(TypedId<Kind> id) {
    return id.value();
}

// A run of raw words read as ids of kind T (by value: a sequence's arena holds words).
template <class T>
class IdSpan {
   public:
    class iterator {
       public:
        using iterator_category = std::random_access_iterator_tag;
        using value_type = T;
        using difference_type = std::ptrdiff_t;
        using reference = T;
        using pointer = void;

        iterator() = default;
        explicit iterator(const uint32_t* at) : at_(at) {}
        T operator*() const { return T(*at_); }
        T operator[](difference_type k) const { return T(at_[k]); }
        iterator& operator++() { return ++at_, *this; }
        iterator operator++(int) { return iterator(at_++); }
        iterator& operator--() { return --at_, *this; }
        iterator operator--(int) { return iterator(at_--); }
        iterator& operator+=(difference_type k) { return at_ += k, *this; }
        iterator& operator-=(difference_type k) { return at_ -= k, *this; }
        iterator operator+(difference_type k) const { return iterator(at_ + k); }
        iterator operator-(difference_type k) const { return iterator(at_ - k); }
        difference_type operator-(const iterator& o) const { return at_ - o.at_; }
        bool operator==(const iterator& o) const = default;
        auto operator<=>(const iterator& o) const = default;

       private:
        const uint32_t* at_ = nullptr;
    };

    IdSpan() = default;
    explicit IdSpan(std::span<const uint32_t> words) : words_(words) {}
    size_t size() const { return words_.size(); }
    bool empty() const { return words_.empty(); }
    T operator[](size_t k) const { return T(words_[k]); }
    iterator begin() const { return iterator(words_.data()); }
    iterator end() const { return iterator(words_.data() + words_.size()); }

   private:
    std::span<const uint32_t> words_;
};

}  // namespace dcmap

template <class Kind>
struct std::hash<dcmap::TypedId<Kind>> {
    size_t operator()(dcmap::TypedId<Kind> id) const noexcept { return std::hash<uint32_t>{}(id.value()); }
};

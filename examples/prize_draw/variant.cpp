#include "variant.hpp"

namespace prize_draw {

std::string_view to_string(Variant variant) noexcept {
  switch (variant) {
    case Variant::none:
      return "none";
    case Variant::for_update:
      return "for-update";
    case Variant::optimistic:
      return "optimistic";
    case Variant::dlock_nohandoff:
      return "dlock-nohandoff";
    case Variant::dlock:
      return "dlock";
    case Variant::dlock_batch:
      return "dlock-batch";
  }
  return "?";
}

const std::vector<Variant>& all_variants() {
  static const std::vector<Variant> all{Variant::none,       Variant::for_update,
                                        Variant::optimistic, Variant::dlock_nohandoff,
                                        Variant::dlock,      Variant::dlock_batch};
  return all;
}

std::optional<Variant> parse_variant(std::string_view text) noexcept {
  for (const auto variant : all_variants()) {
    if (text == to_string(variant)) return variant;
  }
  return std::nullopt;
}

bool guards_stock(Variant variant) noexcept { return variant != Variant::none; }

bool uses_dlock(Variant variant) noexcept {
  return variant == Variant::dlock || variant == Variant::dlock_nohandoff || variant == Variant::dlock_batch;
}

}  // namespace prize_draw

// SPDX-License-Identifier: BSD-2-Clause
// The soft core's firmware: the engine placed in on-card RAM with the
// card's one configuration, then the card loop, forever. Built only into
// the soft-core image (scripts/firmware-rv32.sh), never into the host
// library.
#include "card/card_config.h"
#include "card/card_runner.h"

namespace {

// The engine's state and tables: zeroed RAM (.bss), placed at power-on.
alignas(64) uint8_t g_card_ram[rhinet::fw::card::kCardTableBytes];

}  // namespace

int main() {
  using namespace rhinet::fw;
  constexpr EngineConfig kConfig = card::card_config();
  rhn_card_start(kConfig.db_pages, kConfig.msix_vectors);
  // Both live as long as the core runs: run() never returns.
  CardMemory mem(g_card_ram, sizeof g_card_ram);
  card::CardRunner runner(kConfig, mem);
  // A configuration that does not fit leaves STATUS at FATAL (mirrored by
  // the runner) and the core asleep: the driver sees a failed device.
  runner.run();
}

// tuning.cuh: the canonical planner's measured thresholds, in one place. Each is a route's
// boundary; the line beside it says what it decides and the H200 measurement that set it (the
// rule that uses it has the full comparison; docs/perf-log.md the history). Changing one moves
// work between kernels, never the bits: every route computes the same tree.
#pragma once
#include <cstdint>

namespace treduce {
namespace tuning {

// route_tile (tile_stage): transposed blocks of at least this many elements an output are staged
// by default; shorter ones are copied or walked (reduce_cuda.cu: copies_transposed_block). H100,
// float32 mean of H x W maps stored transposed, staged / copied: 7 x 7 (49) 27.8 / 14.6 µs,
// 14 x 14 (196) 14.0 / 13.0, 56 x 56 (3136) 23.1 / 42.9, 112 x 112 (12544) 16.2 / 30.3.
constexpr int64_t kTileMinElems = 1024;
// route_tile: canon_tile_kernel's threads per block at least (the tree takes the first
// small_threads of them), so that a short output's staging loads are one batch. H100, float32
// 56 x 56 maps stored transposed (2,048 outputs): 26.6 / 23.1 / 24.3 µs at 64 / 128 / 256.
constexpr int kTileMinThreads = 128;
// route_tile: with at most this many outputs an SM, 256 threads a block (more loads in flight
// for each of few blocks). H100, 256 threads / 128: bfloat16 (8, 128, 28, 28) over (0, 2, 3),
// 128 outputs, 10.2 / 13.0 µs; float32 (2, 128, 56, 56) over (2, 3), 256 outputs, 9.3 / 10.0.
constexpr int kTileFewOutputsPerSm = 2;
constexpr int kTileFewOutputsThreads = 256;

// route_small: one block per output.
// Outputs of at least this many leaves go one block each wherever they are: rows (65536, 1024) of
// 16 leaves took 105.7 µs one block each against 75.3 split; (4096, 4096) 23.4 against 25.4.
constexpr int64_t kSmallMinLeaves = 64;
// Two-leaf and misaligned outputs one block each only where there are more than sm_count / 3
// of them: bfloat16 rows (16384, 32768) 254.6 µs against 282.1, but 2^15 7.20 against 6.46.
constexpr int64_t kSmallOutputsPerSmDiv = 3;

// chunks_auto: long outputs in chunks of one block's leaves.
// Any dtype from 16 chunks per SM: float32 rows (1024, 262144) 267.2 -> 250.7 µs.
constexpr int64_t kChunksPerSm = 16;
// A full float32 or 16-bit sum from 32 chunks: 2^19 10.2 -> 8.5 µs; 16 chunks (2^18) 7.6 -> 8.5.
constexpr int64_t kChunksFullSum = 32;
// Rows from 128 chunks where there are at most sm_count / 2 outputs: (64, 65536) 13.4 -> 12.7 µs;
// (8, 131072) in 64 chunks 8.4 -> 8.9.
constexpr int64_t kChunksRows = 128;

// cluster_rows_threads: full sums past one block's leaves in one cluster of chunks of this many
// one-leaf threads where those number at most kChunkCluster (K <= 65536), else of kCanonThreads
// (K <= 131072); longer ones keep the latency kernel. H100, µs eager / in a CUDA graph, the
// latency kernel against 128-thread chunks: float32 28586 8.77 / 4.55 -> 8.35 / 3.48, 58550
// 9.02 / 4.80 -> 7.74 / 3.52, 65536 8.16 / 3.66 -> 7.39 / 3.18; bfloat16 46601 8.10 / 3.97 ->
// 7.20 / 2.97, 65536 7.55 / 3.43 -> 6.59 / 2.80; 131072 in 256-thread chunks, float32 7.68 /
// 3.99 -> 7.68 / 3.57, bfloat16 7.04 / 3.67 -> 6.82 / 3.17.
constexpr int kClusterSumThreads = 128;

// chunk_per: aligned 16-bit chunks of one leaf per thread where there are at most this many in
// all: float16 2^24 21.6 -> 18.4 µs, bfloat16 rows (32, 2^20) 31.4 -> 27.7.
constexpr int64_t kChunkOneLeafMost = 8192;

// chunk_loop: aligned 16-bit chunks of one leaf per thread four per block where an output has at
// least this many, or there are more than this many in all: float16 2^29 270.0 -> 262.6 µs.
constexpr int64_t kChunkLoopFour = 8192;
// ... and chunk_per gives one leaf per thread from this many chunks per output where there are
// more than kChunkOneLeafMost in all: bfloat16 rows (1024, 2^18) 142.4 µs at one per block, 139.0
// at four.
constexpr int64_t kChunkLoopFourRow = 8;

// chunk_threads: float32 chunks of 128 threads where there are at most this many (2^24 27.2 ->
// 26.3 µs eager; 2^26, 8192 chunks, 77.8 -> 82.0 at 128, hence the limit).
constexpr int64_t kChunkHalfF32Most = 2048;
// ... then halved while a half-size chunk keeps at least 16 KB and they number at most two per
// SM: float32 2^20 in 256 chunks of 16 KB 10.4 -> 9.4 µs.
constexpr int64_t kChunkMinBytes = 16384;
constexpr int64_t kChunkHalvePerSm = 2;

// chunk_loop: float32 chunks two per block from 2048 chunks per output: 2^28 261.1 -> 256.0 µs.
constexpr int64_t kChunkLoopTwoF32 = 2048;
// 16-bit chunks two per block where all outputs have 6 to 16 chunks per SM: float16 2^24
// 18.8 / 12.9 -> 18.0 / 12.3 µs eager / graph; (64, 2^20), 31 per SM, 44.0 -> 45.1.
constexpr int64_t kChunkLoopTwoPerSmLo = 6;
constexpr int64_t kChunkLoopTwoPerSmHi = 16;

// TilePlan::blocks_for: column splits of fewer rounds costed at 6% over unsplit tiles (measured
// 5.3%: (64, 4096, 1024) over dim 1, two splits per tile 284.6 µs against 270.4 unsplit).
constexpr int64_t kSplitCostPercent = 106;

// TilePlan::rounds_per_split: the final merge's nodes per thread at most 16 (64 per thread made
// narrow columns 1.7-2x slower; 16 1.2x faster than 8), 64 for one output lane.
constexpr int64_t kMergePerThread = 16;
constexpr int64_t kMergePerThreadOneLane = 64;
// One output lane's splits of at most 4 rounds: float32 2^30 1042 µs at 16, 1022 at 4.
constexpr int64_t kOneLaneMaxRoundsPerSplit = 4;

// TilePlan::lanes_for_short_runs: runs of the innermost reduced dim shorter than 1 KB take 32
// output lanes where they had fewer than 8: float32 (128, 2048, 7, 7) 66.5 -> 33.4 µs; so do
// runs of up to 4 KB that are not whole leaves: bfloat16 (64, 2048, 28, 28) (1,568-byte runs)
// 130.7 µs with 8 lanes, 102.3 with 32 (H100).
constexpr int64_t kShortRunBytes = 1024;
constexpr int64_t kPartialLeafRunBytes = 4096;
constexpr int kShortRunFewLanes = 8;

// TilePlan::lanes_for_whole_waves: more output lanes where their makespan is at most 3/4 of one
// lane's: (32, 512, 28, 28) 94.1 -> 46.9 µs; elsewhere within a few percent.
constexpr int64_t kLaneGainNum = 3;
constexpr int64_t kLaneGainDen = 4;

// TilePlan::lanes_for_columns: 16-bit columns count up to 4 merged nodes per thread as one, so
// that whole 128-byte segments decide: bfloat16 (32768, 16384) 268.4 µs at 16 lanes against
// 346.5 at 8.
constexpr int kColumnsFewMerged16 = 4;

}  // namespace tuning
}  // namespace treduce

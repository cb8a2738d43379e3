# MEMSAMPLES_MACHINE_WAIVER: a regular expression for the WAIVED lines that say this machine cannot
# run CUDA programs at all, or not on the device asked for: no driver (the GPU test launcher), no
# usable device (cuInit), a driver of an older major version than the toolkit's
# (checkDriverInit), a compute mode that admits no context (selectDevice). A test that judges
# something else (a usage error, a worker's report) has nothing to judge then and is Skipped, as
# under no driver at all. Included by cmake/MemorySamples.cmake and the checker scripts; the C++
# checkers of ctest/fault_injection spell the same words (machine_waiver.hpp).
set(MEMSAMPLES_MACHINE_WAIVER
    "WAIVED: (no NVIDIA driver|no usable CUDA device|the NVIDIA driver supports CUDA [0-9.]+, but|device [0-9]+ is in compute mode|none of the [0-9]+ devices can be used)")

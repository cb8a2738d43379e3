// 10_streamOrderedPool's pool attribute calls (see pool_attributes.hpp).
#include "pool_attributes.hpp"

#include "memsamples.hpp"

namespace ms = memsamples;

namespace pool_attributes {

namespace {

// The byte counters are cuuint64_t, the reuse rules int: the driver writes as many bytes as
// the attribute's type has, so each value is read into exactly that type.
std::uint64_t counter(CUmemoryPool pool, CUmemPool_attribute attribute) {
  cuuint64_t value = 0;
  ms::check(cuMemPoolGetAttribute(pool, attribute, &value), "cuMemPoolGetAttribute");
  return value;
}

bool rule(CUmemoryPool pool, CUmemPool_attribute attribute) {
  int value = 0;
  ms::check(cuMemPoolGetAttribute(pool, attribute, &value), "cuMemPoolGetAttribute");
  return value != 0;
}

void setRule(CUmemoryPool pool, CUmemPool_attribute attribute, bool on) {
  int value = on ? 1 : 0;
  ms::check(cuMemPoolSetAttribute(pool, attribute, &value), "cuMemPoolSetAttribute");
}

}  // namespace

PoolUsage readPoolUsage(CUmemoryPool pool) {
  PoolUsage usage;
  usage.reservedCurrent = counter(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
  usage.reservedHigh = counter(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH);
  usage.usedCurrent = counter(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
  usage.usedHigh = counter(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH);
  return usage;
}

void resetHighWater(CUmemoryPool pool) {
  // Only 0 may be written to the high-water marks: it resets each to the current value.
  cuuint64_t zero = 0;
  ms::check(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero),
            "cuMemPoolSetAttribute");
  ms::check(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero),
            "cuMemPoolSetAttribute");
}

void setReleaseThreshold(CUmemoryPool pool, std::uint64_t bytes) {
  cuuint64_t value = bytes;
  ms::check(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value),
            "cuMemPoolSetAttribute");
}

ReuseRules readReuseRules(CUmemoryPool pool) {
  ReuseRules rules;
  rules.followEventDependencies = rule(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES);
  rules.allowOpportunistic = rule(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC);
  rules.allowInternalDependencies = rule(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES);
  return rules;
}

void setReuseRules(CUmemoryPool pool, const ReuseRules& rules) {
  setRule(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, rules.followEventDependencies);
  setRule(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, rules.allowOpportunistic);
  setRule(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
          rules.allowInternalDependencies);
}

}  // namespace pool_attributes

# For the checker scripts run with `cmake -P`: the sample's arguments, handed over as
# -DARG_COUNT=<n> -DARG0=<arg> ... -DARG<n-1>=<arg> (cmake/MemorySamples.cmake writes them so,
# since a list in one -D would not survive CTest's quoting), as the list `arguments`.
set(arguments "")
if(ARG_COUNT GREATER 0)
  math(EXPR last "${ARG_COUNT} - 1")
  foreach(i RANGE ${last})
    list(APPEND arguments "${ARG${i}}")
  endforeach()
endif()

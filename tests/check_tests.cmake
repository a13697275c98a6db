# Read by ctest before it runs anything (the tests folder's TEST_INCLUDE_FILES): one test per
# registered check, as text (check.NAME) and as JSON (check.NAME.json), from the registry itself
# (`kvlab list --format json`), so that a check joins ctest by registering. Benchmarks
# ("bench": true) time this machine and are left out: a timing must not decide a test; their
# logic is unit-tested on synthetic timings and the CLI cases run them --quick.
# KVLAB_CLI (the kvlab binary) is set by the generated file that includes this one.
execute_process(COMMAND "${KVLAB_CLI}" list --format json OUTPUT_VARIABLE checks RESULT_VARIABLE status
                ERROR_VARIABLE error)
if(NOT status EQUAL 0)
  # Not silently zero check tests: one test that fails and says why.
  add_test(check.list "${CMAKE_COMMAND}" -E echo "kvlab list --format json failed (${status}): ${error}")
  set_tests_properties(check.list PROPERTIES WILL_FAIL ON)
  return()
endif()
string(JSON count LENGTH "${checks}")
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${checks}" ${i} check)
  string(JSON bench GET "${checks}" ${i} bench)
  if(bench)
    continue()
  endif()
  add_test(check.${name} "${KVLAB_CLI}" ${name})
  add_test(check.${name}.json "${KVLAB_CLI}" ${name} --format json)
  # A hang, not a slow machine: 10 × the 60 s work budget of one kvlab run (as every test here).
  set_tests_properties(check.${name} check.${name}.json PROPERTIES TIMEOUT 600)
endforeach()

# Every test carries exactly one tier label, which says what it needs and what it costs (docs/testing.md has the
# table and each tier's budget; tests/README.md says where a new test goes). Slow variants carry `slow` as well.
# The Makefile's test targets and the sanitizer runs select by these labels, never by test names.
set(CHORUS_TEST_TIERS unit threads processes system soak fuzz packaging python ecosystem gpu)

# chorus_tier_labels(<out> <tier> <slow>): the LABELS value for a test of <tier>; an unknown tier stops the configure.
function(chorus_tier_labels out tier slow)
  if(NOT tier IN_LIST CHORUS_TEST_TIERS)
    message(FATAL_ERROR "chorus tests: '${tier}' is no tier (one of: ${CHORUS_TEST_TIERS}; docs/testing.md)")
  endif()
  set(labels ${tier})
  if(slow)
    list(APPEND labels slow)
  endif()
  set(${out} "${labels}" PARENT_SCOPE)
endfunction()

# chorus_add_test(NAME <name> TIER <tier> [SLOW] [TIMEOUT <s>] COMMAND <command...> [ENVIRONMENT <VAR=value...>]
#                 [PROPERTIES <key value...>])
# add_test with its tier; TIMEOUT defaults to 300 s. ENVIRONMENT takes one VAR=value an argument (PROPERTIES cannot
# carry a list value).
function(chorus_add_test)
  cmake_parse_arguments(arg "SLOW" "NAME;TIER;TIMEOUT" "COMMAND;ENVIRONMENT;PROPERTIES" ${ARGN})
  if(NOT arg_NAME OR NOT arg_TIER OR NOT arg_COMMAND)
    message(FATAL_ERROR "chorus_add_test needs NAME, TIER and COMMAND (${ARGN})")
  endif()
  chorus_tier_labels(labels "${arg_TIER}" "${arg_SLOW}")
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  add_test(NAME ${arg_NAME} COMMAND ${arg_COMMAND})
  set_tests_properties(${arg_NAME} PROPERTIES LABELS "${labels}" TIMEOUT ${arg_TIMEOUT} ${arg_PROPERTIES})
  if(arg_ENVIRONMENT)
    set_tests_properties(${arg_NAME} PROPERTIES ENVIRONMENT "${arg_ENVIRONMENT}")
  endif()
endfunction()

# chorus_add_gtests(<target> TIER <tier> [SLOW] [FILTER <gtest filter>] [SUFFIX <suffix>] [TIMEOUT <s>]
#                   [ENVIRONMENT <VAR=value>])
# The GoogleTest cases of <target> that FILTER selects (all by default) as ctest entries of <tier>. A target whose
# cases belong to several tiers calls it once per tier with filters that split them; the target is then built by
# `cmake --build --target tier_<tier>` for each. TIMEOUT defaults to 600 s.
function(chorus_add_gtests target)
  cmake_parse_arguments(arg "SLOW" "TIER;FILTER;SUFFIX;TIMEOUT;ENVIRONMENT" "" ${ARGN})
  if(NOT arg_TIER)
    message(FATAL_ERROR "chorus_add_gtests(${target}) needs a TIER (one of: ${CHORUS_TEST_TIERS})")
  endif()
  chorus_tier_labels(labels "${arg_TIER}" "${arg_SLOW}")
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 600)
  endif()
  # The labels are set by a script ctest reads after the discovered cases: gtest_discover_tests flattens a list value
  # among its PROPERTIES ("unit;slow" would become LABELS unit and a property named slow).
  get_property(calls GLOBAL PROPERTY CHORUS_GTEST_CALLS)
  if(NOT calls)
    set(calls 0)
  endif()
  math(EXPR calls "${calls} + 1")
  set_property(GLOBAL PROPERTY CHORUS_GTEST_CALLS ${calls})
  set(cases chorus_gtest_cases_${calls})
  set(options DISCOVERY_TIMEOUT 60 TEST_LIST ${cases})
  if(arg_FILTER)
    list(APPEND options TEST_FILTER "${arg_FILTER}")
  endif()
  if(arg_SUFFIX)
    list(APPEND options TEST_SUFFIX "${arg_SUFFIX}")
  endif()
  set(properties TIMEOUT ${arg_TIMEOUT})
  if(arg_ENVIRONMENT)
    list(APPEND properties ENVIRONMENT "${arg_ENVIRONMENT}")
  endif()
  gtest_discover_tests(${target} ${options} PROPERTIES ${properties})
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${target}_labels_${calls}.cmake)
  file(WRITE ${script} "if(${cases})\n  set_tests_properties(\${${cases}} PROPERTIES LABELS \"${labels}\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${script})
  set_property(GLOBAL APPEND PROPERTY CHORUS_TIER_TARGETS_${arg_TIER} ${target})
endfunction()

# chorus_tier_target(<tier> <target...>): executables a tier's tests run besides their own (tools, helper ranks), so
# that building tier_<tier> is enough to run `ctest -L <tier>`.
function(chorus_tier_target tier)
  set_property(GLOBAL APPEND PROPERTY CHORUS_TIER_TARGETS_${tier} ${ARGN})
endfunction()

# tier_<tier> targets: what `ctest -L <tier>` needs built (the sanitizer trees build only these), made once every
# directory has registered its tests.
function(chorus_add_tier_targets)
  foreach(tier ${CHORUS_TEST_TIERS})
    get_property(targets GLOBAL PROPERTY CHORUS_TIER_TARGETS_${tier})
    add_custom_target(tier_${tier})
    if(targets)
      list(REMOVE_DUPLICATES targets)
      add_dependencies(tier_${tier} ${targets})
    endif()
  endforeach()
endfunction()

# chorus_check_tiers(): fails the configure, naming them, when tests of the calling directory lack a tier label or
# carry two. Directories with tests defer it to their end: cmake_language(DEFER CALL chorus_check_tiers).
# (GoogleTest cases are listed at build time; tests/system/every_test_has_a_tier.sh checks those.)
function(chorus_check_tiers)
  get_property(tests DIRECTORY PROPERTY TESTS)
  set(bad)
  foreach(test ${tests})
    get_test_property(${test} LABELS labels)
    set(tiers)
    foreach(label ${labels})
      if(label IN_LIST CHORUS_TEST_TIERS)
        list(APPEND tiers ${label})
      endif()
    endforeach()
    list(LENGTH tiers n)
    if(NOT n EQUAL 1)
      list(APPEND bad "${test} (${labels})")
    endif()
  endforeach()
  if(bad)
    list(JOIN bad ", " bad)
    message(FATAL_ERROR "chorus tests without exactly one tier label (one of: ${CHORUS_TEST_TIERS}): ${bad}. "
                        "Register them with chorus_add_test or chorus_add_gtests (cmake/test_tiers.cmake).")
  endif()
endfunction()

cmake_language(DEFER CALL chorus_add_tier_targets)

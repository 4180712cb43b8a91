cmake_policy(VERSION 3.18)
# Runs `headcount ARGS` in WORKDIR and compares stdout with the golden file GOLDEN.
# Invoked by CTest (tests/CMakeLists.txt). Regenerate goldens with tests/golden/update.sh and review
# the diff like code.
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND "${BIN}" ${args} WORKING_DIRECTORY "${WORKDIR}"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\nstderr:\n${err}")
endif()
# The version is masked, so a release does not rewrite every golden file.
foreach(form "headcount ${VERSION}" "\"version\": \"${VERSION}\"" "\"version\":\"${VERSION}\"" "\"semanticVersion\": \"${VERSION}\"")
  string(REPLACE "${VERSION}" "@VERSION@" masked "${form}")
  string(REPLACE "${form}" "${masked}" out "${out}")
endforeach()
get_filename_component(name "${GOLDEN}" NAME)
set(actual "${ACTUAL_DIR}/${name}")
file(WRITE "${actual}" "${out}")
execute_process(COMMAND diff -u "${GOLDEN}" "${actual}" RESULT_VARIABLE differs OUTPUT_VARIABLE diff)
if(differs)
  message(FATAL_ERROR "output differs from ${GOLDEN}:\n${diff}")
endif()

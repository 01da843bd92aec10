# The fuzz targets in the main tree's suite (included by tests/CMakeLists.txt): fuzz_build
# configures and builds the fuzz tree (clang, sanitizers) in build/fuzz once, and each target
# then replays its regression inputs and fuzzes for ACTORPS_FUZZ_SECONDS from its seed corpus.
# Without clang or libFuzzer every one of these fails, naming the Debian package to install.
set(ACTORPS_FUZZ_SECONDS 20 CACHE STRING "Seconds each fuzz target runs in the suite")
set(actorps_fuzz_tree ${PROJECT_BINARY_DIR}/fuzz)
set(actorps_fuzz_targets wire link_frame shm_record arriving_push checkpoint cluster_spec model_file
                         prediction_input text_lines)
add_test(NAME fuzz_build
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/build_fuzz_tree.sh ${PROJECT_SOURCE_DIR} ${actorps_fuzz_tree})
# The main tree's compiler launcher (ccache, say) serves the fuzz tree too.
set_tests_properties(fuzz_build PROPERTIES FIXTURES_SETUP actorps_fuzz_tree TIMEOUT 2400
                     ENVIRONMENT "ACTORPS_FUZZ_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}")
foreach(target ${actorps_fuzz_targets})
  add_test(NAME fuzz_${target}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_fuzz_target.sh ${actorps_fuzz_tree}/fuzz_${target}
                   ${CMAKE_CURRENT_LIST_DIR}/corpus/${target} ${CMAKE_CURRENT_LIST_DIR}/regressions/${target}
                   ${ACTORPS_FUZZ_SECONDS} ${actorps_fuzz_tree}/findings/${target})
  set_tests_properties(fuzz_${target} PROPERTIES FIXTURES_REQUIRED actorps_fuzz_tree TIMEOUT 180)
endforeach()

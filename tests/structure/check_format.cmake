# Runs clang-format --dry-run -Werror over every C++ and CUDA source of the
# repository (the test fixtures under tests/structure/bad_tree excepted: they
# are data for the layer check). Found at test time, so new files count.
# -DCLANG_FORMAT=<program> -DSOURCE_DIR=<repository root>
if(NOT CLANG_FORMAT)
  message(FATAL_ERROR "clang-format not found: scripts/setup.sh installs clang-format-14")
endif()
set(files)
foreach(dir include src kernels tests bench)
  file(GLOB_RECURSE found ${SOURCE_DIR}/${dir}/*.hpp ${SOURCE_DIR}/${dir}/*.cpp ${SOURCE_DIR}/${dir}/*.h
       ${SOURCE_DIR}/${dir}/*.cu ${SOURCE_DIR}/${dir}/*.cuh)
  list(APPEND files ${found})
endforeach()
list(FILTER files EXCLUDE REGEX "/tests/structure/bad_tree/")
list(LENGTH files count)
if(count EQUAL 0)
  message(FATAL_ERROR "no sources found under ${SOURCE_DIR}")
endif()
execute_process(COMMAND ${CLANG_FORMAT} --style=file --dry-run -Werror ${files} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clang-format: the files above are not formatted (run clang-format -i on them)")
endif()
message(STATUS "clang-format: ${count} files formatted")

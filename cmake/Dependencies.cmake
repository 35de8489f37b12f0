# Every dependency lookup of the project lives here.

# A carried folder (scripts/gpu-prepare.sh) supplies the header-only
# libraries and googletest sources on machines that have a compiler but no
# packages; packages found on the system are used first.
set(FABRICBENCH_CARRY_DIR "" CACHE PATH "Folder made by scripts/gpu-prepare.sh (headers and googletest sources)")
if(FABRICBENCH_CARRY_DIR)
  # Dependencies from a carried folder made by scripts/gpu-prepare.sh:
  #   include/  CLI11, nlohmann json and fmt headers (fmt used header-only)
  #   googletest/  googletest sources, built here when tests are on
  # Packages installed on the machine win over the carried copies.

  find_package(fmt QUIET)
  if(NOT fmt_FOUND)
    # The compiled fmt when it was carried (lib/libfmt.so): header-only fmt
    # compiles its implementation into every file, doubling the build.
    find_library(fabricbench_carried_fmt_so NAMES fmt PATHS ${FABRICBENCH_CARRY_DIR}/lib NO_DEFAULT_PATH)
    if(fabricbench_carried_fmt_so)
      add_library(fabricbench_carried_fmt SHARED IMPORTED)
      set_target_properties(fabricbench_carried_fmt PROPERTIES IMPORTED_LOCATION ${fabricbench_carried_fmt_so})
      target_include_directories(fabricbench_carried_fmt SYSTEM INTERFACE ${FABRICBENCH_CARRY_DIR}/include)
      message(STATUS "fabricbench: fmt compiled, from ${fabricbench_carried_fmt_so}")
    else()
      add_library(fabricbench_carried_fmt INTERFACE)
      target_include_directories(fabricbench_carried_fmt SYSTEM INTERFACE ${FABRICBENCH_CARRY_DIR}/include)
      target_compile_definitions(fabricbench_carried_fmt INTERFACE FMT_HEADER_ONLY=1)
    endif()
    add_library(fmt::fmt ALIAS fabricbench_carried_fmt)
  endif()
  find_package(nlohmann_json 3.10 QUIET)
  if(NOT nlohmann_json_FOUND)
    add_library(fabricbench_carried_json INTERFACE)
    target_include_directories(fabricbench_carried_json SYSTEM INTERFACE ${FABRICBENCH_CARRY_DIR}/include)
    add_library(nlohmann_json::nlohmann_json ALIAS fabricbench_carried_json)
  endif()
  find_package(CLI11 QUIET)
  if(NOT CLI11_FOUND)
    add_library(fabricbench_carried_cli11 INTERFACE)
    target_include_directories(fabricbench_carried_cli11 SYSTEM INTERFACE ${FABRICBENCH_CARRY_DIR}/include)
    add_library(CLI11::CLI11 ALIAS fabricbench_carried_cli11)
  endif()
  if(FABRICBENCH_TESTS)
    find_package(GTest QUIET)
    if(NOT GTest_FOUND)
      if(NOT EXISTS ${FABRICBENCH_CARRY_DIR}/googletest/CMakeLists.txt)
        message(FATAL_ERROR "${FABRICBENCH_CARRY_DIR}/googletest has no googletest sources; run scripts/gpu-prepare.sh")
      endif()
      set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
      set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
      add_subdirectory(${FABRICBENCH_CARRY_DIR}/googletest ${CMAKE_BINARY_DIR}/_carried_googletest EXCLUDE_FROM_ALL)
      # googletest >= 1.11 defines these names itself.
      if(NOT TARGET GTest::gtest)
        add_library(GTest::gtest ALIAS gtest)
        add_library(GTest::gtest_main ALIAS gtest_main)
      endif()
    endif()
  endif()
  message(STATUS "fabricbench: dependencies from ${FABRICBENCH_CARRY_DIR} where not installed")
else()
  find_package(fmt REQUIRED)
  find_package(nlohmann_json 3.10 REQUIRED)
  find_package(CLI11 REQUIRED)
endif()

# MPI ----------------------------------------------------------------------
set(FABRICBENCH_HAVE_MPI OFF)
if(NOT FABRICBENCH_MPI STREQUAL "OFF")
  if(FABRICBENCH_MPI STREQUAL "ON")
    find_package(MPI REQUIRED COMPONENTS C)
  else()
    find_package(MPI COMPONENTS C)
  endif()
  if(MPI_C_FOUND)
    set(FABRICBENCH_HAVE_MPI ON)
  endif()
endif()
message(STATUS "fabricbench: MPI ${FABRICBENCH_HAVE_MPI}")

# CUDA and NCCL --------------------------------------------------------------
# NCCL often lives outside the toolkit (a distribution package, a Python
# wheel's nvidia/nccl folder), so it is searched separately with NCCL_ROOT as
# a hint.
set(FABRICBENCH_HAVE_CUDA OFF)
if(NOT FABRICBENCH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  set(NCCL_ROOT "$ENV{NCCL_ROOT}" CACHE PATH "Where NCCL is installed (include/ and lib/)")
  find_path(NCCL_INCLUDE_DIR nccl.h
    HINTS ${NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
    PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl
    HINTS ${NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
    PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
  include(CheckLanguage)
  check_language(CUDA)
  if(CUDAToolkit_FOUND AND CMAKE_CUDA_COMPILER AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(FABRICBENCH_HAVE_CUDA ON)
    # Ampere and Hopper as machine code, plus Hopper PTX that newer GPUs
    # compile at load time.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual" CACHE STRING "CUDA architectures of the kernels")
    endif()
    enable_language(CUDA)
    if(NOT TARGET fabricbench_nccl)
      add_library(fabricbench_nccl UNKNOWN IMPORTED)
      set_target_properties(fabricbench_nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                                        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
    endif()
  elseif(FABRICBENCH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FABRICBENCH_CUDA=ON but CUDA (${CUDAToolkit_FOUND}, nvcc '${CMAKE_CUDA_COMPILER}') "
                        "or NCCL (header '${NCCL_INCLUDE_DIR}', library '${NCCL_LIBRARY}') was not found; "
                        "set NCCL_ROOT or CUDAToolkit_ROOT")
  endif()
endif()
message(STATUS "fabricbench: CUDA/NCCL ${FABRICBENCH_HAVE_CUDA}")

# Tests ----------------------------------------------------------------------
if(FABRICBENCH_TESTS)
  if(NOT TARGET GTest::gtest)
    find_package(GTest REQUIRED)
  endif()
  # The JSON Schema check uses Python's jsonschema (Debian: python3-jsonschema).
  # A python3 earlier in PATH may lack it, so every python3 on PATH is tried.
  set(FABRICBENCH_PYTHON "" CACHE FILEPATH "A python3 that can import jsonschema")
  if(NOT FABRICBENCH_PYTHON)
    string(REPLACE ":" ";" _fb_path "$ENV{PATH}")
    foreach(_dir IN LISTS _fb_path)
      if(EXISTS "${_dir}/python3")
        execute_process(COMMAND "${_dir}/python3" -c "import jsonschema"
                        RESULT_VARIABLE _fb_rc OUTPUT_QUIET ERROR_QUIET)
        if(_fb_rc EQUAL 0)
          set(FABRICBENCH_PYTHON "${_dir}/python3" CACHE FILEPATH "" FORCE)
          break()
        endif()
      endif()
    endforeach()
  endif()
  if(NOT FABRICBENCH_PYTHON AND FABRICBENCH_CARRY_DIR)
    # A bare machine runs the C++ and GPU tests; the schema tests need jsonschema.
    find_program(FABRICBENCH_PYTHON python3)
    message(WARNING "no python3 with jsonschema: the schema and end-to-end tests will fail here")
  endif()
  if(NOT FABRICBENCH_PYTHON)
    message(FATAL_ERROR "no python3 with the jsonschema module found (Debian: apt-get install python3-jsonschema)")
  endif()
  message(STATUS "fabricbench: schema validation with ${FABRICBENCH_PYTHON}")
endif()

# Every dependency lookup of the project lives here.

find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)

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
  elseif(FABRICBENCH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FABRICBENCH_CUDA=ON but CUDA (${CUDAToolkit_FOUND}, nvcc '${CMAKE_CUDA_COMPILER}') "
                        "or NCCL (header '${NCCL_INCLUDE_DIR}', library '${NCCL_LIBRARY}') was not found; "
                        "set NCCL_ROOT or CUDAToolkit_ROOT")
  endif()
endif()
message(STATUS "fabricbench: CUDA/NCCL ${FABRICBENCH_HAVE_CUDA}")

# Tests ----------------------------------------------------------------------
if(FABRICBENCH_TESTS)
  find_package(GTest REQUIRED)
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
  if(NOT FABRICBENCH_PYTHON)
    message(FATAL_ERROR "no python3 with the jsonschema module found (Debian: apt-get install python3-jsonschema)")
  endif()
  message(STATUS "fabricbench: schema validation with ${FABRICBENCH_PYTHON}")
endif()

# Installation (GNUInstallDirs) and the Debian package (CPack).
#
#   cmake --install build/ci --prefix /opt/fabricbench
#   cd build/ci && cpack -G DEB        # fabricbench_<version>_<arch>.deb
#
# What is installed: the fabricbench binary, its man page, the result schema
# and the reference figures (the binary embeds the same files; the copies are
# for other tools), the Slurm and
# Kubernetes launch examples, README, the guides and LICENSE.

include(GNUInstallDirs)

install(TARGETS fabricbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT fabricbench)

# The man page carries the project's version; Debian wants it gzipped.
configure_file(${PROJECT_SOURCE_DIR}/cmake/fabricbench.1.in ${CMAKE_CURRENT_BINARY_DIR}/man/fabricbench.1 @ONLY)
file(ARCHIVE_CREATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/man/fabricbench.1.gz
     PATHS ${CMAKE_CURRENT_BINARY_DIR}/man/fabricbench.1 FORMAT raw COMPRESSION GZip)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/man/fabricbench.1.gz
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT fabricbench)

install(FILES ${PROJECT_SOURCE_DIR}/src/schema/result.schema.json ${PROJECT_SOURCE_DIR}/src/data/expectations.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fabricbench COMPONENT fabricbench)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT fabricbench)
# The guides `fabricbench help` prints, also as files.
file(GLOB FB_GUIDE_FILES ${PROJECT_SOURCE_DIR}/docs/guides/*.md)
install(FILES ${FB_GUIDE_FILES} DESTINATION ${CMAKE_INSTALL_DOCDIR}/guides COMPONENT fabricbench)
# Debian's place for the licence is the package's copyright file.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR}
        RENAME copyright COMPONENT fabricbench)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/slurm/fabricbench.sbatch
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT fabricbench)
install(FILES ${PROJECT_SOURCE_DIR}/scripts/kubernetes/mpijob.yaml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT fabricbench)

# With CUDA, libcudart and libnccl usually live outside the loader's default
# path (/usr/local/cuda/lib64, a wheel's nvidia/nccl/lib): the installed
# binary keeps the directories it was linked against as its RUNPATH. Without
# CUDA every library is in a system directory and no RUNPATH is set.
if(FABRICBENCH_HAVE_CUDA)
  set_target_properties(fabricbench PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
endif()

# Debian package ---------------------------------------------------------------
set(CPACK_PACKAGE_NAME fabricbench)
set(CPACK_PACKAGE_VENDOR "fabricbench")
# The Maintainer field; set -DCPACK_PACKAGE_CONTACT="Name <address>" for a real one.
if(NOT CPACK_PACKAGE_CONTACT)
  set(CPACK_PACKAGE_CONTACT "fabricbench maintainers <fabricbench@localhost>")
endif()
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU cluster interconnect benchmark (NCCL and MPI collectives)")
set(CPACK_PACKAGE_DESCRIPTION
    "fabricbench measures collective and point-to-point bandwidth across the
nodes of a cluster, a scaling ladder and a node-pair matrix that names slow
nodes and links, and writes JSON and CSV results. It is launched with mpirun
or srun, one rank per GPU; without GPUs it runs on MPI over host memory.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# Library dependencies come from dpkg-shlibdeps, which maps each library the
# binary needs to the package that ships it (libopenmpi3, libfmt9, libstdc++6,
# ...). mpirun is a program, not a library, so Open MPI's launcher is named
# here.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "")
if(FABRICBENCH_HAVE_MPI)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin")
  set(CPACK_DEBIAN_PACKAGE_SUGGESTS "slurm-client")
endif()
if(FABRICBENCH_HAVE_CUDA)
  # The binary needs the CUDA runtime (libcudart.so.<major>) and NCCL
  # (libnccl.so.2). Where a Debian package ships the library it was linked
  # against, that package joins Depends. Where none does (the CUDA installer,
  # a tarball, a Python wheel), a Depends would make the package uninstallable
  # on the very machine it was built on, so it recommends the packages of
  # NVIDIA's repository that ship them (apt installs recommendations by
  # default where that repository is configured) and the binary keeps the
  # folders it was linked against as its RUNPATH.
  get_filename_component(_fb_nccl_dir "${NCCL_LIBRARY}" DIRECTORY)
  get_filename_component(_fb_cudart_dir "${CUDA_cudart_LIBRARY}" DIRECTORY)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${_fb_cudart_dir} ${CUDAToolkit_LIBRARY_DIR} ${_fb_nccl_dir})
  set(_fb_cuda_package "cuda-cudart-${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
  set(_fb_recommends "")
  foreach(_fb_pair "${CUDA_cudart_LIBRARY}|${_fb_cuda_package}" "${NCCL_LIBRARY}|libnccl2")
    string(REPLACE "|" ";" _fb_pair "${_fb_pair}")
    list(GET _fb_pair 0 _fb_lib)
    list(GET _fb_pair 1 _fb_repo_package)
    get_filename_component(_fb_real "${_fb_lib}" REALPATH)
    execute_process(COMMAND dpkg-query -S "${_fb_real}" RESULT_VARIABLE _fb_rc OUTPUT_VARIABLE _fb_owner ERROR_QUIET)
    if(_fb_rc EQUAL 0)
      string(REGEX REPLACE "[:,].*" "" _fb_owner "${_fb_owner}")
      string(STRIP "${_fb_owner}" _fb_owner)
      if(CPACK_DEBIAN_PACKAGE_DEPENDS)
        string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", ")
      endif()
      string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS "${_fb_owner}")
    else()
      list(APPEND _fb_recommends ${_fb_repo_package})
    endif()
  endforeach()
  if(_fb_recommends)
    list(JOIN _fb_recommends ", " CPACK_DEBIAN_PACKAGE_RECOMMENDS)
  endif()
  string(APPEND CPACK_PACKAGE_DESCRIPTION "
Built with the NCCL transport: needs the CUDA runtime ${CUDAToolkit_VERSION_MAJOR} (libcudart.so.${CUDAToolkit_VERSION_MAJOR})
and NCCL 2 (libnccl.so.2) on the library path or in the folders the binary was
linked against.")
endif()

include(CPack)

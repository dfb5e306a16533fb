# Runs at install time (install(CODE) in CMakeLists.txt), when the prefix
# is known for certain (cmake --install --prefix overrides the configured
# one): the link libibverbs loads, libibverbs/librhinet-rdmav34.so ->
# ../librhinetdv.so.1, and the driver file rhinet.driver. Both honour
# DESTDIR and are added to the install manifest.
#
# In: CMAKE_INSTALL_PREFIX, RHINET_LIBDIR and RHINET_SYSCONFDIR (as
# configured, normally relative), RHINET_IBVERBS_PROVIDER_DIR (where the
# system's libibverbs loads providers named without a path).

if(IS_ABSOLUTE "${RHINET_LIBDIR}")
  set(libdir "${RHINET_LIBDIR}")
else()
  set(libdir "${CMAKE_INSTALL_PREFIX}/${RHINET_LIBDIR}")
endif()
cmake_path(NORMAL_PATH libdir)

# GNUInstallDirs' rule for the configuration directory, applied to the
# install-time prefix: /etc for / and /usr, /etc/opt/X for /opt/X, else
# under the prefix.
if(IS_ABSOLUTE "${RHINET_SYSCONFDIR}")
  set(sysconfdir "${RHINET_SYSCONFDIR}")
elseif(CMAKE_INSTALL_PREFIX MATCHES "^/(usr/?)?$")
  set(sysconfdir "/${RHINET_SYSCONFDIR}")
elseif(CMAKE_INSTALL_PREFIX MATCHES "^/opt/(.+)$")
  set(sysconfdir "/${RHINET_SYSCONFDIR}/opt/${CMAKE_MATCH_1}")
else()
  set(sysconfdir "${CMAKE_INSTALL_PREFIX}/${RHINET_SYSCONFDIR}")
endif()
cmake_path(NORMAL_PATH sysconfdir)

# The manifest names files without DESTDIR, as CMake's own entries.
set(link "${libdir}/libibverbs/librhinet-rdmav34.so")
message(STATUS "Installing: $ENV{DESTDIR}${link}")
file(MAKE_DIRECTORY "$ENV{DESTDIR}${libdir}/libibverbs")
file(CREATE_LINK ../librhinetdv.so.1 "$ENV{DESTDIR}${link}" SYMBOLIC)

# A provider outside libibverbs' directory is named by its path (without
# the -rdmav34.so that libibverbs appends).
if("${libdir}/libibverbs" STREQUAL RHINET_IBVERBS_PROVIDER_DIR)
  set(provider rhinet)
else()
  set(provider "${libdir}/libibverbs/librhinet")
endif()
set(driver "${sysconfdir}/libibverbs.d/rhinet.driver")
message(STATUS "Installing: $ENV{DESTDIR}${driver}")
file(WRITE "$ENV{DESTDIR}${driver}" "driver ${provider}\n")

list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${link}" "${driver}")

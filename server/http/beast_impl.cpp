// Separate compilation: the one translation unit that holds the compiled code of
// Boost.Asio and Boost.Beast (BOOST_ASIO_SEPARATE_COMPILATION and
// BOOST_BEAST_SEPARATE_COMPILATION are set for every user of sluice_server), so the
// other server files only parse declarations.
#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>

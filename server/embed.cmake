# embed.cmake: turns the file IN into the C source OUT defining
#   const unsigned char opd__status_page[]; const unsigned long opd__status_page_len;
# (cmake -DIN=... -DOUT=... -P embed.cmake; run by the build, see server/CMakeLists.txt).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" nhex)
math(EXPR len "${nhex} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* generated from ${IN} by embed.cmake */\n"
     "const unsigned char opd__status_page[] = {\n${bytes}0};\n"
     "const unsigned long opd__status_page_len = ${len};\n")

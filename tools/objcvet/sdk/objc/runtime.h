// objc/runtime.h (Apple's Objective-C runtime reference).
#pragma once
#include <objc/objc.h>
extern BOOL class_addMethod(Class cls, SEL name, IMP imp, const char *types);

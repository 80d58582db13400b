// Foundation: the classes and calls Delta's macOS code uses, with the
// signatures of Apple's documentation.
#pragma once
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <objc/objc.h>
#include <CoreFoundation/CoreFoundation.h>

typedef long NSInteger;
typedef unsigned long NSUInteger;
#define NS_ENUM(type, name) enum name : type name; enum name : type
#define NS_OPTIONS(type, name) enum name : type name; enum name : type

@class NSString;

@protocol NSObject
- (BOOL)isEqual:(id)object;
@end

__attribute__((objc_root_class))
@interface NSObject <NSObject> {
	Class isa;
}
+ (instancetype)alloc;
+ (instancetype)new;
- (instancetype)init;
- (id)copy;
- (BOOL)isEqual:(id)object;
@end

@protocol NSCopying
@end

@interface NSString : NSObject <NSCopying>
@property (readonly) NSUInteger length;
@property (readonly) const char *UTF8String;
+ (instancetype)stringWithUTF8String:(const char *)nullTerminatedCString;
+ (instancetype)stringWithFormat:(NSString *)format, ...;
- (BOOL)isEqualToString:(NSString *)aString;
- (BOOL)hasPrefix:(NSString *)str;
@end

@interface NSConstantString : NSString
@end

@interface NSArray<ObjectType> : NSObject
+ (instancetype)arrayWithObjects:(const ObjectType _Nonnull [_Nonnull])objects count:(NSUInteger)cnt;
@property (readonly) NSUInteger count;
@end

@interface NSDictionary<KeyType, ObjectType> : NSObject
+ (instancetype)dictionaryWithObjects:(const ObjectType _Nonnull [_Nonnull])objects forKeys:(const KeyType _Nonnull [_Nonnull])keys count:(NSUInteger)cnt;
- (ObjectType)objectForKeyedSubscript:(KeyType)key;
@end

@interface NSSet<ObjectType> : NSObject
+ (instancetype)setWithObject:(ObjectType)object;
+ (instancetype)setWithObjects:(ObjectType)firstObj, ... __attribute__((sentinel(0, 1)));
@end

@interface NSError : NSObject
@property (readonly, copy) NSString *localizedDescription;
@end

@interface NSUUID : NSObject
+ (instancetype)UUID;
@property (readonly, copy) NSString *UUIDString;
@end

@interface NSBundle : NSObject
@property (class, readonly, strong) NSBundle *mainBundle;
@property (readonly, copy) NSString *bundleIdentifier;
@end

typedef NS_OPTIONS(uint64_t, NSActivityOptions) {
	NSActivityIdleDisplaySleepDisabled = (1ULL << 40),
	NSActivityIdleSystemSleepDisabled = (1ULL << 20),
	NSActivitySuddenTerminationDisabled = (1ULL << 14),
	NSActivityAutomaticTerminationDisabled = (1ULL << 15),
	NSActivityUserInitiated = (0x00FFFFFFULL | NSActivityIdleSystemSleepDisabled),
	NSActivityUserInitiatedAllowingIdleSystemSleep = (NSActivityUserInitiated & ~NSActivityIdleSystemSleepDisabled),
	NSActivityBackground = 0x000000FFULL,
};

@interface NSProcessInfo : NSObject
@property (class, readonly, strong) NSProcessInfo *processInfo;
- (id<NSObject>)beginActivityWithOptions:(NSActivityOptions)options reason:(NSString *)reason;
- (void)endActivity:(id<NSObject>)activity;
@end

extern Class NSClassFromString(NSString *aClassName);
extern void NSLog(NSString *format, ...);

#include <dispatch/dispatch.h>
